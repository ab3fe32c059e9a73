"""Where a trivial job's CPU goes: py-spy on every process of a local stack while it runs one-job workflows.

Starts `roving up` (2 nodes x 4 cores, as ops/bench/e2e.py), attaches `py-spy record` to the control plane and
each agent, and `perf record` to nats-server (a Go binary: sampled by `perf` when it is installed, Debian's
linux-perf, else only its CPU is reported), submits one-job workflows from 4 threads for the duration, and writes one
profile per process to --out. It prints one JSON line: per process, CPU ms per job and the functions with the most
samples of their own (self) and in total (inclusive), idle waits left out, and (`threads`) each Python process's CPU
ms per job by thread, from /proc (exact, whatever a sampler makes of waits), named as `py-spy dump` names them
(numbered threads of one pool summed). Needs root (or ptrace rights) and `pip install py-spy`.

    .venv/bin/python ops/bench/profile.py [--seconds 20] [--out /tmp/roving-profile]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from e2e import ENDED, ONE_JOB, Stack, _cmdline, drained, submit, wait_ended  # noqa: E402 - ops/bench, beside this file
from procstat import children, cpu_seconds, thread_cpu  # noqa: E402

# Frames that are a thread waiting, not working: left out of the tables (py-spy --idle is off, but a blocking
# syscall sampled mid-call still shows).
IDLE = ("select", "poll", "epoll", "wait", "_worker", "acquire", "sleep", "run_forever", "_run_once", "recv_into")


def processes(stack: Stack) -> dict[str, int]:
    found = {"control_plane": stack.process.pid}
    for number, pid in enumerate(k for k in children(stack.process.pid) if "agent_main" in _cmdline(k)):
        found[f"agent{number}"] = pid
    return found


def nats_pid(stack: Stack) -> int | None:
    return next((k for k in children(stack.process.pid) if "nats-server" in _cmdline(k)), None)


def perf_record(pid: int, seconds: int, out: Path) -> subprocess.Popen | None:
    """nats-server sampled by `perf` (software clock, call graphs), or None without perf."""
    if not shutil.which("perf"):
        return None
    return subprocess.Popen(["perf", "record", "-F", "499", "-g", "-p", str(pid), "-o", str(out), "--", "sleep",
                             str(seconds)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def perf_top(data: Path, count: int = 20) -> dict:
    """Self and inclusive shares of nats-server's samples, by Go function, from `perf script`."""
    script = subprocess.run(["perf", "script", "-i", str(data), "-F", "ip,sym"], capture_output=True, text=True,
                            check=False).stdout
    own, inclusive, total = Counter(), Counter(), 0
    for sample in script.split("\n\n"):
        frames = [line.split(None, 1)[1] for line in sample.strip().splitlines() if len(line.split(None, 1)) == 2]
        if not frames or any(word in frames[0] for word in ("futex", "epoll", "nanosleep", "runtime.usleep")):
            continue
        total += 1
        own[frames[0]] += 1
        for frame in set(frames):
            inclusive[frame] += 1
    share = lambda c: {k: round(v * 100 / max(total, 1), 1) for k, v in c.most_common(count)}  # noqa: E731
    return {"busy_samples": total, "self_pct": share(own), "inclusive_pct": share(inclusive)}


def by_thread(pid: int, before: dict[int, float]) -> dict[str, float]:
    """CPU seconds each thread spent since `before`, by its Python name (`py-spy dump`; the pools' numbered threads
    summed under one name), most first; a thread py-spy does not name keeps its id."""
    spent = {tid: seconds - before.get(tid, 0.0) for tid, seconds in thread_cpu(pid).items()}
    dump = subprocess.run(["py-spy", "dump", "--pid", str(pid)], capture_output=True, text=True, check=False).stdout
    names = {int(tid): name for tid, name in re.findall(r'^Thread (\d+) \([^)]*\): "([^"]+)"', dump, re.MULTILINE)}
    summed: Counter = Counter()
    for tid, seconds in spent.items():
        summed[re.sub(r"[-_ ]\d+$", "", names.get(tid, str(tid)))] += seconds
    return {name: seconds for name, seconds in summed.most_common() if seconds > 0}


def record(pid: int, seconds: int, out: Path) -> subprocess.Popen:
    return subprocess.Popen(["py-spy", "record", "-p", str(pid), "-d", str(seconds), "-r", "250", "-f", "raw", "--gil",
                             "-o", str(out), "--nonblocking"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def top(raw: Path, count: int = 15) -> dict:
    own, inclusive, total = Counter(), Counter(), 0
    for line in raw.read_text().splitlines():
        stack, _, samples = line.rpartition(" ")
        frames = [f.split(" (")[0] + " " + f.rsplit("/", 1)[-1].rstrip(")") for f in stack.split(";")]
        if not frames or any(word in frames[-1].split(" ")[0] for word in IDLE):
            continue
        n = int(samples)
        total += n
        own[frames[-1]] += n
        for frame in set(frames):
            inclusive[frame] += n
    share = lambda c: {k: round(v * 100 / max(total, 1), 1) for k, v in c.most_common(count)}  # noqa: E731
    return {"busy_samples": total, "self_pct": share(own), "inclusive_pct": share(inclusive)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "roving-profile")
    parser.add_argument("--sequential", action="store_true",
                        help="one job at a time (each submitted once the last ended), as job_cost.py runs them")
    args = parser.parse_args(argv)
    if not shutil.which("py-spy"):
        print("py-spy is not on PATH: pip install py-spy", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="roving-profile-") as tmp:
        stack = Stack(Path(tmp))
        try:
            client = stack.start()
            ids = [submit(client, ONE_JOB, "warm") for _ in range(10)]
            wait_ended(client, set(ids), 30)
            pids, nats = processes(stack), nats_pid(stack)
            if nats is not None:
                pids["nats"] = nats
            cpu0 = {name: cpu_seconds(pid) for name, pid in pids.items()}
            threads0 = {name: thread_cpu(pid) for name, pid in pids.items() if name != "nats"}
            spies = {name: record(pid, args.seconds, args.out / f"{name}.txt") for name, pid in pids.items()
                     if name != "nats"}
            perf = perf_record(nats, args.seconds, args.out / "nats.perf") if nats is not None else None
            submitted = (one_by_one if args.sequential else load)(stack, args.seconds)
            for spy in [*spies.values(), *([perf] if perf else [])]:
                spy.wait()
            cpu1 = {name: cpu_seconds(pid) for name, pid in pids.items()}
            threads = {name: by_thread(pids[name], before) for name, before in threads0.items()}
            ended = wait_ended(client, submitted, 60)[0]
            client.close()
        finally:
            stack.stop()
    jobs = sum(w["status"] in ENDED for w in ended)
    report = {"jobs": jobs, "cpu_ms_per_job": {n: round((cpu1[n] - cpu0[n]) * 1000 / max(jobs, 1), 1) for n in pids},
              "threads": {name: {thread: round(seconds * 1000 / max(jobs, 1), 2) for thread, seconds in spent.items()}
                          for name, spent in threads.items()},
              "profiles": {name: top(args.out / f"{name}.txt") for name in pids if (args.out / f"{name}.txt").exists()}}
    if (args.out / "nats.perf").exists():
        report["profiles"]["nats"] = perf_top(args.out / "nats.perf")
    print(json.dumps(report))
    return 0


def one_by_one(stack: Stack, seconds: float) -> set[str]:
    """One-job workflows one after the other; the end is polled every 20 ms (the bench's own cost stays small)."""
    stop, ids = time.monotonic() + seconds, set()
    with stack.client(stack.data_dir / "admin.token") as client:
        while time.monotonic() < stop:
            wid = submit(client, ONE_JOB, "profile")
            ids.add(wid)
            while client.get(f"/v4/workflows/{wid}").json()["status"] not in ENDED:
                time.sleep(0.02)
    return ids


def load(stack: Stack, seconds: float) -> set[str]:
    """Waves of 100 one-job workflows, submitted from 4 threads, each wave waited for, until the time is up: the
    queue stays short, as in e2e.py's 200-job burst, so a pass's cost is not a long queue's."""
    token, stop, ids = stack.data_dir / "admin.token", time.monotonic() + seconds, set()
    clients = [stack.client(token) for _ in range(4)]
    try:
        with ThreadPoolExecutor(4) as pool:
            while time.monotonic() < stop:
                wave = set(pool.map(lambda n: submit(clients[n % 4], ONE_JOB, "profile"), range(100)))
                drained(clients[0], 60)
                ids |= wave
    finally:
        for client in clients:
            client.close()
    return ids


if __name__ == "__main__":
    sys.exit(main())

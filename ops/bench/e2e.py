"""End-to-end benchmark: trivial jobs (`true`) through a real local stack (`roving up`, 2 nodes x 4 cores).

One run measures, in order: 200 one-job workflows submitted from 4 threads (jobs/s from the first submit to
the last end, and submits/s), a 200-task task-array at concurrency 8 (tasks/s), a 20-job dependency chain
(seconds a hop), and an idle single job's submit-to-end latency (p50/p99). It prints one JSON line, with the
CPU seconds the control plane, nats-server and the agents spent. End times are the server's own (a workflow's
last event), so the bench's polling does not add to them. A workload that does not end within its budget is
reported with what ended so far and `"timed_out": true`.

    .venv/bin/python ops/bench/e2e.py [--singles 40] [--budget 60] [--jobs 200] [--chain 20]

`--nats r3` runs the stack on three bare nats-servers of its own (every stream R3), `--nats r3-secure` on the shipped
secure layout (adapters.nats_shipped_cluster: TLS, users, encrypted store, R3); `nats` CPU is then the three servers'.
ops/bench/slurm_peer.py runs the same workloads (`run_workloads`) beside Slurm's in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from procstat import children, cpu_seconds  # noqa: E402 - ops/bench, beside this file

from adapters.nats_cluster import LocalCluster  # noqa: E402
from adapters.nats_server import free_port  # noqa: E402
from adapters.nats_shipped_cluster import ShippedCluster  # noqa: E402

UP = "import sys; from api.up.main import up_main; sys.exit(up_main([]))"
JOB = "    image: {uri: docker://alpine}\n    command: [\"true\"]\n    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}\n"
ONE_JOB = "version: v4\njobs:\n  j:\n" + JOB
ENDED = ("FINISHED", "FAILED", "CANCELED")
LAYOUTS = ("r1", "r3", "r3-secure")  # the embedded server; three bare servers; the shipped secure layout


@dataclass(frozen=True)
class Layout:
    """The log a stack runs on: the settings that point it there, and the nats-servers to count (none: its own)."""

    name: str
    env: dict[str, str]
    nats_pids: tuple[int, ...] = ()
    control_url: str | None = None  # how a tool reads that log as the control plane (None: the embedded server)


def layout_list(text: str) -> list[str]:
    """`--layouts r1,r3-secure`: names of LAYOUTS, in the order given."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names or any(name not in LAYOUTS for name in names):
        raise argparse.ArgumentTypeError(f"{text!r}: layouts are {', '.join(LAYOUTS)}")
    return names


@contextmanager
def nats_layout(name: str) -> Iterator[Layout]:
    """`name` of LAYOUTS, started for one stack and stopped after it: each run gets a fresh store."""
    if name == "r1":
        yield Layout(name, {})
        return
    with tempfile.TemporaryDirectory(prefix=f"roving-bench-{name}-") as tmp:
        secure = name == "r3-secure"
        cluster = (ShippedCluster if secure else LocalCluster)(Path(tmp)).start()
        try:
            env = cluster.env if secure else {"ROVING_NATS_URL": cluster.url, "ROVING_NATS_REPLICAS": "3"}
            yield Layout(name, env, tuple(s.process.pid for s in cluster.servers if s.process is not None),
                         cluster.url_for("control") if secure else cluster.url)
        finally:
            cluster.stop()


def array(tasks: int, concurrency: int = 8) -> str:
    return ("version: v4\njobs:\n  tasks:\n" + JOB
            + f"    task-array: {{start: 1, end: {tasks}, concurrency: {concurrency}}}\n")


def chain(length: int) -> str:
    jobs = [f"  j{i}:\n" + JOB + (f"    depends-on: [{{name: j{i - 1}, status: FINISHED}}]\n" if i else "")
            for i in range(length)]
    return "version: v4\njobs:\n" + "".join(jobs)


class Stack:
    """`roving up` as a child process on a free port, in a throw-away data directory."""

    def __init__(self, data_dir: Path, nodes: int = 2, cpus: int = 4, extra: dict[str, str] | None = None,
                 code: Path | None = None, nats_pids: tuple[int, ...] = ()) -> None:
        """`code`: a checkout to run instead of this one (an earlier commit's git worktree, for a baseline);
        `nats_pids`: the servers of a log of its own (`extra` names it), counted as its nats-server."""
        self.data_dir, self.nodes, self.nats_pids = data_dir, nodes, nats_pids
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        env = {**os.environ, "ROVING_DATA_DIR": str(data_dir), "ROVING_LISTEN": f"127.0.0.1:{port}",
               "ROVING_LOCAL_NODES": str(nodes), "ROVING_LOCAL_NODE_CPUS": str(cpus),
               "ROVING_LOCAL_NODE_MEMORY": "4GiB", "ROVING_LOG_FORMAT": "console"}
        env.pop("ROVING_NATS_URL", None)  # the embedded server, unless `extra` names a log (a cluster's)
        env.update(extra or {})
        self.log = open(data_dir / "stack.log", "wb")  # noqa: SIM115 - closed in stop()
        python = sys.executable
        if code is not None:  # `python -c` puts its working directory first on the path, then PYTHONPATH
            env["PYTHONPATH"] = str(code)
            own = code / ".venv" / "bin" / "python"  # its own dependencies (an older one may need what this dropped)
            python = str(own) if own.exists() else python
        self.process = subprocess.Popen([python, "-c", UP], env=env, stdout=self.log, cwd=code,
                                        stderr=subprocess.STDOUT, start_new_session=True)

    def start(self, timeout: float = 90) -> httpx.Client:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("roving up exited: " + (self.data_dir / "stack.log").read_text()[-2000:])
            token = self.data_dir / "admin.token"
            if token.exists() and self._ready_nodes(token) >= self.nodes:
                return self.client(token)
            time.sleep(0.2)
        raise TimeoutError("roving up did not become ready")

    def client(self, token: Path) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=60,
                            headers={"Authorization": f"Bearer {token.read_text().strip()}"})

    def _ready_nodes(self, token: Path) -> int:
        try:
            with self.client(token) as client:
                nodes = client.get("/v4/nodes").json()["nodes"]
        except (httpx.HTTPError, KeyError, ValueError):
            return 0
        return sum(n["status"] == "READY" for n in nodes)

    def cpu(self) -> dict[str, float]:
        """CPU seconds so far: the control plane, nats-server (its own, or the log's `nats_pids`), and the agents."""
        pid, kids = self.process.pid, children(self.process.pid)
        agents = [k for k in kids if "agent_main" in _cmdline(k)]
        nats = [k for k in kids if "nats-server" in _cmdline(k)] + list(self.nats_pids)
        return {"control_plane": cpu_seconds(pid), "nats": sum(map(cpu_seconds, nats)),
                "agents": sum(map(cpu_seconds, agents))}

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.log.close()


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def submit(client: httpx.Client, definition: str, name: str) -> str:
    answer = client.post("/v4/workflows", json={"name": name, "definition": definition})
    answer.raise_for_status()
    return answer.json()["id"]


def rows(client: httpx.Client, ids: set[str]) -> list[dict]:
    return [w for w in client.get("/v4/workflows").json()["workflows"] if w["id"] in ids]


def wait_ended(client: httpx.Client, ids: set[str], budget: float, every: float = 0.25) -> tuple[list[dict], bool]:
    """The workflows' rows once all ended (False) or when the budget ran out (True)."""
    deadline = time.monotonic() + budget
    while True:
        found = rows(client, ids)
        if len(found) == len(ids) and all(w["status"] in ENDED for w in found):
            return found, False
        if time.monotonic() > deadline:
            return found, True
        time.sleep(every)


def stuck(client: httpx.Client, found: list[dict], most: int = 3) -> list[dict]:
    """What a workload that did not end left behind, asked while the stack still runs: each unended workflow's
    detail (its stages), `why`, and events, and the scheduler's queue (the kept log's end, see `kept_log`)."""
    def ask(path: str) -> object:
        try:
            answer = client.get(path)
            return answer.json() if answer.status_code == 200 else f"HTTP {answer.status_code}: {answer.text[:500]}"
        except (httpx.HTTPError, ValueError) as error:
            return repr(error)
    left = [w["id"] for w in found if w["status"] not in ENDED][:most]
    return [{"workflow": wid, "detail": ask(f"/v4/workflows/{wid}"), "why": ask(f"/v4/workflows/{wid}/why"),
             "events": ask(f"/v4/workflows/{wid}/events?limit=5000")} for wid in left] + [
            {"queue": ask("/v4/scheduler/queue")}]


def drained(client: httpx.Client, budget: float) -> None:
    """Until no allocation waits or runs, asked of the queue's counts (cheap, unlike a listing of workflows)."""
    deadline = time.monotonic() + budget
    while time.monotonic() < deadline:
        depth = client.get("/v4/scheduler/stats").json()["depth"]
        if not any(depth.get(state) for state in ("PENDING", "READY", "RUNNING")):
            return
        time.sleep(0.1)


def at(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def one_job_burst(stack: Stack, client: httpx.Client, count: int, threads: int, budget: float) -> dict:
    """Each thread submits over its own kept-alive connection, as a script or an SDK does. (Until 2026-12-05 each
    submit made a new httpx client, whose construction, in this bench's own process, capped the rate near 30/s.)"""
    token = stack.data_dir / "admin.token"
    clients = [stack.client(token) for _ in range(threads)]

    def one(number: int) -> str:
        return submit(clients[number % threads], ONE_JOB, "burst")

    began = time.time()
    try:
        with ThreadPoolExecutor(threads) as pool:
            ids = set(pool.map(one, range(count)))
    finally:
        for own in clients:
            own.close()
    submitted = time.time() - began
    found, timed_out = wait_ended(client, ids, budget)
    ended = [w for w in found if w["status"] in ENDED]
    last = max((at(w["updated_at"]) for w in ended), default=time.time())
    return {"jobs": count, "ended": len(ended), "failed": sum(w["status"] != "FINISHED" for w in ended),
            "jobs_per_s": round(len(ended) / max(last - began, 1e-9), 2),
            "submits_per_s": round(count / submitted, 1), "timed_out": timed_out,
            **({"stuck": stuck(client, found)} if timed_out else {})}


def task_array(client: httpx.Client, budget: float, tasks: int = 200) -> dict:
    began = time.time()
    wid = submit(client, array(tasks), "array")
    found, timed_out = wait_ended(client, {wid}, budget)
    row = found[0]
    end = at(row["updated_at"]) if not timed_out else time.time()
    return {"tasks": row["stage_count"], "ended": row["stages_ended"], "status": row["status"],
            "tasks_per_s": round(row["stages_ended"] / max(end - began, 1e-9), 2), "timed_out": timed_out,
            **({"stuck": stuck(client, found)} if timed_out else {})}


def dependency_chain(client: httpx.Client, length: int, budget: float) -> dict:
    began = time.time()
    wid = submit(client, chain(length), "chain")
    found, timed_out = wait_ended(client, {wid}, budget)
    row = found[0]
    end = at(row["updated_at"]) if not timed_out else time.time()
    hops = max(row["stages_ended"], 1)
    return {"jobs": length, "ended": row["stages_ended"], "status": row["status"],
            "jobs_per_s": round(row["stages_ended"] / max(end - began, 1e-9), 2),
            "seconds_per_hop": round((end - began) / hops, 3), "timed_out": timed_out,
            **({"stuck": stuck(client, found)} if timed_out else {})}


def idle_singles(client: httpx.Client, count: int, budget: float) -> dict:
    latencies: list[float] = []
    deadline = time.monotonic() + budget
    for _ in range(count):
        if time.monotonic() > deadline:
            break
        began = time.time()
        wid = submit(client, ONE_JOB, "single")
        while (status := client.get(f"/v4/workflows/{wid}").json()) and status["status"] not in ENDED:
            time.sleep(0.01)
        row = rows(client, {wid})[0]
        latencies.append(at(row["updated_at"]) - began)
        time.sleep(0.05)  # idle: nothing else in flight
    ordered = sorted(latencies)
    return {"samples": len(ordered), "p50_ms": round(statistics.median(ordered) * 1000, 1),
            "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--singles", type=int, default=40, help="idle single jobs to time (default 40; 0: none)")
    parser.add_argument("--jobs", type=int, default=200, help="one-job workflows, and tasks of the array (default 200)")
    parser.add_argument("--chain", type=int, default=20, help="jobs in the dependency chain (default 20)")
    parser.add_argument("--budget", type=float, default=60.0, help="seconds each workload may take (default 60)")
    parser.add_argument("--nats", choices=LAYOUTS, default="r1",
                        help="the log: the embedded server (r1, default), three bare servers (r3), or the shipped "
                             "secure layout (r3-secure); a baseline runs on a layout of its own, alike")
    parser.add_argument("--no-baseline", action="store_true",
                        help="skip the same run's baseline (agents polling every 0.5 s, no long poll)")
    parser.add_argument("--baseline-code", type=Path,
                        help="the baseline is this checkout (an earlier commit's git worktree) run as it is, first")
    args = parser.parse_args(argv)
    base = None
    if args.baseline_code is not None:
        base = on_layout(args, {}, args.baseline_code.resolve())
    result = {"bench": "e2e", "nodes": "2x4", "nats": args.nats, **on_layout(args, {})}
    if base is None and not args.no_baseline:
        base = on_layout(args, {"ROVING_AGENT_POLL_WAIT": "0"})
    if base is not None:
        result["baseline_code" if args.baseline_code else "baseline_plain_polling"] = base
        result["ratio_vs_baseline"] = ratios(result, base)
    print(json.dumps(result), flush=True)
    return 0


def on_layout(args: argparse.Namespace, extra: dict[str, str], code: Path | None = None) -> dict:
    """`run_workloads` on a fresh log of `args.nats`'s layout."""
    with nats_layout(args.nats) as layout:
        return run_workloads(args, {**extra, **layout.env}, code, layout.nats_pids)


def run_workloads(args: argparse.Namespace, extra: dict[str, str], code: Path | None = None,
                  nats_pids: tuple[int, ...] = ()) -> dict:
    with tempfile.TemporaryDirectory(prefix="roving-bench-e2e-") as tmp:
        stack = Stack(Path(tmp), extra=extra, code=code, nats_pids=nats_pids)
        try:
            client = stack.start()
            began = time.monotonic()
            cpu0 = stack.cpu()
            result: dict = {
                "one_job_workflows": one_job_burst(stack, client, args.jobs, 4, args.budget),
                "task_array": task_array(client, args.budget, args.jobs),
                "chain": dependency_chain(client, args.chain, args.budget),
            }
            if args.singles:
                result["idle_single"] = idle_singles(client, args.singles, args.budget)
            cpu1 = stack.cpu()
            result["cpu_seconds"] = {k: round(cpu1[k] - cpu0[k], 2) for k in cpu1}
            result["wall_seconds"] = round(time.monotonic() - began, 1)
            client.close()
        finally:
            stack.stop()
        left = {key: part.pop("stuck") for key, part in result.items() if isinstance(part, dict) and "stuck" in part}
        if any(part.get("timed_out") for part in result.values() if isinstance(part, dict)):
            result["stack_log"] = kept_log(stack, left)
    return result


def kept_log(stack: Stack, left: dict | None = None) -> str:
    """A copy of the stack's output outside its throw-away data directory, to read why a workload did not end: the
    control plane's, then each agent's own log (reports, pushes, starts: `roving up` writes them beside it), then
    what the unended workloads left (`stuck`), as JSON."""
    handle, name = tempfile.mkstemp(prefix="roving-bench-e2e-", suffix=".log")
    with os.fdopen(handle, "wb") as copy:
        copy.write((stack.data_dir / "stack.log").read_bytes())
        for agent in sorted(stack.data_dir.glob("agent-*.log")):
            copy.write(f"\n===== {agent.name} =====\n".encode() + agent.read_bytes())
        if left:
            copy.write(b"\n===== stuck (JSON) =====\n" + json.dumps(left, indent=1).encode() + b"\n")
    return name


def ratios(now: dict, base: dict) -> dict:
    """Speed-ups against the baseline measured in the same run (above 1: better now)."""
    def ratio(a: float, b: float) -> float | None:
        return round(a / b, 2) if a and b else None
    return {"one_job_jobs_per_s": ratio(now["one_job_workflows"]["jobs_per_s"], base["one_job_workflows"]["jobs_per_s"]),
            "task_array_tasks_per_s": ratio(now["task_array"]["tasks_per_s"], base["task_array"]["tasks_per_s"]),
            "chain_hop": ratio(base["chain"]["seconds_per_hop"], now["chain"]["seconds_per_hop"]),
            "idle_p50": ratio(base["idle_single"]["p50_ms"], now["idle_single"]["p50_ms"])
            if "idle_single" in now and "idle_single" in base else None}


if __name__ == "__main__":
    sys.exit(main())

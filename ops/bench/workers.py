"""API workers benchmark: 5-job workflow submits/s with 1, 2, 3 and 4 API workers, one JSON line.

Each round starts `roving up` (embedded nats-server, no local agents, so every allocation stays queued; the
scheduler runs in the worker holding its lease, as it ships) with ROVING_API_WORKERS=N on a fresh data dir,
and drives it from client threads over keep-alive HTTP/1.1 connections (the standard library's client: cheap
for this machine), each connection landing on whichever worker the kernel picks. Per round it reports
submits/s and the CPU each submit cost the workers (summed and each), the parent, the nats-server and this
client, from /proc (Linux), so the curve says whether Python or the log is the limit on this machine.

    python ops/bench/workers.py [--workers 1,2,3,4] [--submits 1500]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from procstat import children, cpu_seconds  # noqa: E402 - ops/bench, beside this file
from ready import wait_ready  # noqa: E402

from adapters.nats_server import free_port  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
UP = "import sys; from api.up.main import up_main; sys.exit(up_main(sys.argv[1:]))"
JOBS_PER_WORKFLOW = 5
CONNECTIONS = 8
DEFINITION = "version: v4\njobs:\n" + "".join(
    f"  j{i}:\n    image: {{uri: docker://alpine}}\n    command: [echo, '{i}']\n" for i in range(JOBS_PER_WORKFLOW))


def submit_many(port: int, token: str, count: int) -> float:
    """`count` submits over CONNECTIONS keep-alive connections; returns submits per second."""
    body = json.dumps({"name": "bench", "definition": DEFINITION}).encode()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def client(n: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            for _ in range(n):
                connection.request("POST", "/v4/workflows", body=body, headers=headers)
                answer = connection.getresponse()
                data = answer.read()
                if answer.status != 201:
                    raise SystemExit(f"submit: {answer.status} {data[:300]!r}")
        finally:
            connection.close()

    started = time.perf_counter()
    with ThreadPoolExecutor(CONNECTIONS) as pool:
        list(pool.map(client, [count // CONNECTIONS] * CONNECTIONS))
    return (count // CONNECTIONS * CONNECTIONS) / (time.perf_counter() - started)


def start(data_dir: str, port: int, workers: int) -> subprocess.Popen:
    env = {**os.environ, "ROVING_DATA_DIR": data_dir, "ROVING_LISTEN": f"127.0.0.1:{port}",
           "ROVING_LOCAL_NODES": "0", "ROVING_API_WORKERS": str(workers), "ROVING_LOG_LEVEL": "warning",
           "PYTHONPATH": str(ROOT)}
    env.pop("ROVING_NATS_URL", None)
    child = subprocess.Popen([sys.executable, "-c", UP], env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                             start_new_session=True)
    if wait_ready(child, data_dir, port, 120, every=0.2):
        return child
    os.killpg(child.pid, signal.SIGKILL)
    raise SystemExit("roving up was not ready within 120 s")


def processes(parent: int) -> dict[str, list[int]]:
    """The parent, its API workers and its nats-server, by /proc."""
    found: dict[str, list[int]] = {"parent": [parent], "workers": [], "nats": []}
    for pid in children(parent):
        command = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        found["nats" if "nats-server" in command else "workers" if "worker_main" in command else "parent"].append(pid)
    return found


def cpu(groups: dict[str, list[int]]) -> dict[str, list[float]]:
    return {name: [cpu_seconds(pid) for pid in pids] for name, pids in groups.items()} | {
        "client": [sum(os.times()[:2])]}


def round_of(workers: int, submits: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        child = start(tmp, port, workers)
        try:
            token = (Path(tmp) / "admin.token").read_text().strip()
            submit_many(port, token, CONNECTIONS * 10)  # warm: connections, caches, the scheduler's lease
            groups = processes(child.pid)
            before = cpu(groups)
            rate = submit_many(port, token, submits)
            after = cpu(groups)
        finally:
            child.terminate()
            try:
                child.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
    used = {name: [(a - b) * 1000 / submits for a, b in zip(after[name], before[name], strict=True)]
            for name in after}
    return {"workers": workers, "submits_per_s": round(rate),
            "cpu_ms_per_submit": {name: round(sum(values), 2) for name, values in used.items()}
            | {"control_plane": round(sum(used["parent"]) + sum(used["workers"]), 2)},
            "worker_cpu_ms_per_submit_each": [round(value, 2) for value in used["workers"]]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", default="1,2,3,4", help="comma list of worker counts")
    parser.add_argument("--submits", type=int, default=1500)
    args = parser.parse_args()
    rounds = [round_of(int(n), args.submits) for n in args.workers.split(",")]
    print(json.dumps({"jobs_per_workflow": JOBS_PER_WORKFLOW, "connections": CONNECTIONS, "submits": args.submits,
                      "cpu_cores": os.cpu_count(), "rounds": rounds,
                      "curve": {r["workers"]: r["submits_per_s"] for r in rounds},
                      "targets": {"submits_per_s_on_4_cores": 500}}))


if __name__ == "__main__":
    main()

"""API benchmark: workflow submits/s and queue p50/p99 with 10,000 queued allocations, one JSON line.

The control plane runs as its own process (embedded nats-server, JetStream log, views, audit, HTTP on
loopback; no agents and no scheduler, so every allocation stays queued), as `roving up` runs it. This
process drives it over keep-alive HTTP/1.1 from client threads using the standard library's client, which
costs the server's machine far less than httpx would. The baseline measured in the same run is
GET /healthz, the HTTP stack's own floor. It also reports the CPU each submit costs the control plane, its
nats-server and this client (from /proc, Linux only): with `cpu_cores`, those bound what the machine could
reach however the work were spread over processes. The control plane runs twice: first with every commit
its own atomic batch (the baseline), then with group commit, as it ships.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from procstat import children, cpu_seconds  # noqa: E402 - ops/bench, beside this file
from ready import wait_ready  # noqa: E402

from adapters.nats_server import free_port  # noqa: E402

JOBS_PER_WORKFLOW = 5
WORKFLOWS = 2000
THREADS = 8
DEFINITION = "version: v4\njobs:\n" + "".join(
    f"  j{i}:\n    image: {{uri: docker://alpine}}\n    command: [echo, '{i}']\n" for i in range(JOBS_PER_WORKFLOW))


class Client:
    """One keep-alive connection with the bearer token; `call` returns (status, body) and its seconds."""

    def __init__(self, port: int, token: str) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def call(self, method: str, path: str, body: bytes | None = None) -> float:
        started = time.perf_counter()
        self.connection.request(method, path, body=body, headers=self.headers)
        answer = self.connection.getresponse()
        data = answer.read()
        if answer.status >= 300:
            raise SystemExit(f"{method} {path}: {answer.status} {data[:300]!r}")
        return time.perf_counter() - started

    def get_text(self, path: str) -> str:
        self.connection.request("GET", path, headers=self.headers)
        return self.connection.getresponse().read().decode()

    def get_json(self, path: str) -> dict:
        self.connection.request("GET", path, headers=self.headers)
        return json.loads(self.connection.getresponse().read())

    def close(self) -> None:
        self.connection.close()


def rate(port: int, token: str, count: int, method: str, path: str, body: bytes | None = None) -> float:
    def worker(n: int) -> None:
        client = Client(port, token)
        try:
            for _ in range(n):
                client.call(method, path, body)
        finally:
            client.close()

    started = time.perf_counter()
    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(worker, [count // THREADS] * THREADS))
    return count / (time.perf_counter() - started)


def percentiles(client: Client, path: str, runs: int) -> dict[str, float]:
    samples = sorted(client.call("GET", path) * 1000 for _ in range(runs))
    return {"p50_ms": round(statistics.median(samples), 2), "p99_ms": round(samples[int(len(samples) * 0.99) - 1], 2)}


def serve(data_dir: str, port: int, grouping: bool) -> None:
    """The child: the control plane without a scheduler or agents, until terminated."""
    import logging

    import structlog

    import adapters.jetstream.commit
    from api.composition.settings import load_settings
    from api.composition.stack import Stack

    # the access log is info per request: on a terminal-less pipe it would be the bench's main cost
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    adapters.jetstream.commit.GROUPING = grouping
    settings = load_settings({"ROVING_DATA_DIR": data_dir, "ROVING_LISTEN": f"127.0.0.1:{port}"})
    stack = Stack(settings, scheduler=False).start()
    stack.serve(in_thread=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # so `finally` stops the embedded nats-server too
    try:
        threading.Event().wait()
    finally:
        stack.stop()


def started(data_dir: str, port: int, grouping: bool) -> subprocess.Popen:
    child = subprocess.Popen([sys.executable, __file__, "serve", data_dir, str(port), str(int(grouping))])
    if wait_ready(child, data_dir, port, 60):
        return child
    child.kill()
    raise SystemExit("the control plane was not ready within 60 s")


def log_counts(port: int, token: str) -> tuple[float, float]:
    """Publishes to the log and the commits they carried, from /metrics (every stream summed)."""
    client = Client(port, token)
    text = client.get_text("/metrics")
    client.close()

    def total(name: str) -> float:
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name + "{"))

    return total("roving_log_batches_total"), total("roving_log_commits_total")


def cpu_used(pids: dict[str, int]) -> dict[str, float]:
    return {name: cpu_seconds(pid) for name, pid in pids.items()} | {"client": sum(os.times()[:2])}


def measure(port: int, token: str, server_pid: int) -> dict:
    health = rate(port, token, 2000, "GET", "/healthz")
    body = json.dumps({"name": "bench", "definition": DEFINITION}).encode()
    nats = children(server_pid)[:1]  # the embedded nats-server, when the server started one
    pids = {"server": server_pid, **({"nats": nats[0]} if nats else {})}
    before, (batches, commits) = cpu_used(pids), log_counts(port, token)
    submits = rate(port, token, WORKFLOWS, "POST", "/v4/workflows", body)
    batches_after, commits_after = log_counts(port, token)
    per_submit = {f"{name}_cpu_ms_per_submit": round((used - before[name]) * 1000 / WORKFLOWS, 2)
                  for name, used in cpu_used(pids).items()}
    client = Client(port, token)
    queued = client.get_json("/v4/scheduler/stats")["depth"]["READY"]
    queue = percentiles(client, "/v4/scheduler/queue", 200)
    client.close()
    return {
        "healthz_per_s": round(health), "submits_per_s": round(submits), "jobs_per_workflow": JOBS_PER_WORKFLOW,
        "submit_vs_healthz_ratio": round(submits / health, 3), "queued_allocations": queued,
        "queue_p50_ms": queue["p50_ms"], "queue_p99_ms": queue["p99_ms"], **per_submit,
        "commits_per_batch": round((commits_after - commits) / max(batches_after - batches, 1), 2),
        "cpu_cores": os.cpu_count(),
        "targets": {"submits_per_s": 500, "queue_p99_ms": 50},
    }


def run(grouping: bool) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        child = started(tmp, port, grouping)
        try:
            token = (Path(tmp) / "admin.token").read_text().strip()
            return measure(port, token, child.pid)
        finally:
            child.terminate()
            child.wait(30)


def main() -> None:
    """The figures with group commit, and the submit rate without it (one batch per commit) as a baseline."""
    ungrouped = run(grouping=False)
    figures = run(grouping=True)
    figures |= {"ungrouped_submits_per_s": ungrouped["submits_per_s"],
                "ungrouped_nats_cpu_ms_per_submit": ungrouped.get("nats_cpu_ms_per_submit"),
                "grouping_speedup": round(figures["submits_per_s"] / max(ungrouped["submits_per_s"], 1), 2)}
    print(json.dumps(figures))


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        serve(sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1")
    else:
        main()

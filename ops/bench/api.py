"""API benchmark: workflow submits/s and queue p50/p99 with 10,000 queued allocations, one JSON line.

Runs the real control plane in-process (embedded nats-server, JetStream log, views, HTTP on loopback; no
agents and no scheduler, so every allocation stays queued) and drives it over HTTP from client threads.
The baseline measured in the same run is GET /healthz, the HTTP stack's own floor.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import httpx  # noqa: E402

from adapters.nats_server import free_port  # noqa: E402
from api.settings import load_settings  # noqa: E402
from api.stack import Stack  # noqa: E402

JOBS_PER_WORKFLOW = 5
WORKFLOWS = 2000
THREADS = 8
DEFINITION = "version: v4\njobs:\n" + "".join(
    f"  j{i}:\n    image: {{uri: docker://alpine}}\n    command: [echo, '{i}']\n" for i in range(JOBS_PER_WORKFLOW))


def timed(client: httpx.Client, method: str, path: str, **kwargs) -> float:
    started = time.perf_counter()
    answer = client.request(method, path, **kwargs)
    assert answer.status_code < 300, answer.text
    return time.perf_counter() - started


def rate(url: str, token: str, count: int, call) -> float:
    def worker(n: int) -> None:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as client:
            for _ in range(n):
                call(client)

    started = time.perf_counter()
    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(worker, [count // THREADS] * THREADS))
    return count / (time.perf_counter() - started)


def percentiles(url: str, token: str, path: str, runs: int) -> dict[str, float]:
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as client:
        samples = sorted(timed(client, "GET", path) * 1000 for _ in range(runs))
    return {"p50_ms": round(statistics.median(samples), 2), "p99_ms": round(samples[int(len(samples) * 0.99) - 1], 2)}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings({"ROVING_DATA_DIR": tmp, "ROVING_LISTEN": f"127.0.0.1:{free_port()}"})
        stack = Stack(settings, scheduler=False).start()
        stack.serve(in_thread=True)
        token = (Path(tmp) / "admin.token").read_text().strip()
        try:
            health = rate(stack.url, token, 2000, lambda c: timed(c, "GET", "/healthz"))
            body = {"name": "bench", "definition": DEFINITION}
            submits = rate(stack.url, token, WORKFLOWS, lambda c: timed(c, "POST", "/v4/workflows", json=body))
            queued = len(stack.views.queue.rows(state="READY"))
            queue = percentiles(stack.url, token, "/v4/scheduler/queue", 200)
        finally:
            stack.stop()
    print(json.dumps({
        "healthz_per_s": round(health), "submits_per_s": round(submits), "jobs_per_workflow": JOBS_PER_WORKFLOW,
        "submit_vs_healthz_ratio": round(submits / health, 3), "queued_allocations": queued,
        "queue_p50_ms": queue["p50_ms"], "queue_p99_ms": queue["p99_ms"],
        "targets": {"submits_per_s": 500, "queue_p99_ms": 50},
    }))


if __name__ == "__main__":
    main()

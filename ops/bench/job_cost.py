"""What one trivial job costs from submit to end: commits, log batches, events, HTTP round trips and CPU.

A real local stack (`roving up`, 1 node x 4 cores) runs N one-job workflows (`true`) one after the other, each
submitted once the one before has ended, so nothing overlaps. The counts are read before and after from the
control plane's own metrics (`roving_log_commits_total`, `roving_log_batches_total`, `roving_http_requests_total`
by route, which tells the agent's round trips from the bench's own) and from the log's stream (events, bytes);
CPU from /proc. It prints one JSON line of figures per job.

    .venv/bin/python ops/bench/job_cost.py [--jobs 30]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx
import nats

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from e2e import ENDED, ONE_JOB, Stack, submit  # noqa: E402 - ops/bench, beside this file

from adapters.nats_auth import role_url  # noqa: E402
from adapters.nats_tls import connect_options  # noqa: E402

SAMPLE = re.compile(r'^(roving_log_commits_total|roving_log_batches_total|roving_http_requests_total)\{([^}]*)\} '
                    r'([0-9.e+]+)$', re.M)


def counters(client: httpx.Client) -> Counter:
    """Commits, batches, and HTTP requests by who asked: the agent's routes apart from the rest."""
    found: Counter = Counter()
    for name, labels, value in SAMPLE.findall(client.get("/metrics").text):
        if name == "roving_http_requests_total":
            route = re.search(r'route="([^"]*)"', labels)
            who = "agent" if route and route.group(1).startswith("/v4/agent") else "other"
            found[f"http_{who}"] += float(value)
        else:
            found[name.removeprefix("roving_log_").removesuffix("_total")] += float(value)
    return found


async def stream_state(data_dir: Path) -> dict[str, tuple[int, int]]:
    """Each stream's messages and bytes, read as the control plane reads the log (its credentials, its CA)."""
    store = data_dir / "nats"
    port = re.search(r'listen: "127\.0\.0\.1:(\d+)"', (store / "roving.conf").read_text()).group(1)
    url = role_url(f"nats://127.0.0.1:{port}", store, "control")
    nc = await nats.connect(**connect_options(url))
    try:
        return {info.config.name: (info.state.messages, info.state.bytes) for info in await nc.jsm().streams_info()}
    finally:
        await nc.close()


def run_jobs(client: httpx.Client, jobs: int) -> list[float]:
    latencies = []
    for _ in range(jobs):
        began = time.monotonic()
        wid = submit(client, ONE_JOB, "cost")
        while client.get(f"/v4/workflows/{wid}").json()["status"] not in ENDED:
            time.sleep(0.005)
        latencies.append(time.monotonic() - began)
    return latencies


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=30)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="roving-job-cost-") as tmp:
        stack = Stack(Path(tmp), nodes=1, cpus=4, extra={"ROVING_API_WORKERS": "1"})
        try:
            client = stack.start()
            run_jobs(client, 3)  # warm: the first job pays for imports and connections
            time.sleep(1)
            before, cpu0, state0 = counters(client), stack.cpu(), asyncio.run(stream_state(stack.data_dir))
            latencies = run_jobs(client, args.jobs)
            after, cpu1, state1 = counters(client), stack.cpu(), asyncio.run(stream_state(stack.data_dir))
        finally:
            stack.stop()
    n = args.jobs
    per = {key: round((after[key] - before[key]) / n, 2) for key in ("commits", "batches", "http_agent")}
    print(json.dumps({
        "jobs": n, **{f"{key}_per_job": value for key, value in per.items()},
        "messages_per_job": {name: round((state1[name][0] - state0.get(name, (0, 0))[0]) / n, 2) for name in state1
                             if state1[name][0] != state0.get(name, (0, 0))[0]},
        "bytes_per_job": {name: round((state1[name][1] - state0.get(name, (0, 0))[1]) / n) for name in state1
                          if state1[name][1] != state0.get(name, (0, 0))[1]},
        "cpu_ms_per_job": {who: round((cpu1[who] - cpu0[who]) * 1000 / n, 1) for who in cpu0},
        "mean_submit_to_end_ms": round(sum(latencies) / n * 1000, 1),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What one trivial job costs from submit to end: commits, log batches, events, HTTP round trips and CPU.

A real local stack (`roving up`, 1 node x 4 cores) runs N one-job workflows (`true`) one after the other, each
submitted once the one before has ended, so nothing overlaps. The counts are read before and after from the
control plane's own metrics (`roving_log_commits_total`, `roving_log_batches_total`, `roving_log_requests_total`
by kind, `roving_http_requests_total` by route, which tells the agent's round trips from the bench's own) and from
the log's stream (events, bytes); CPU from /proc. The bench learns of each end by polling the workflow every 5 ms:
those requests are the bench's, not a job's, so their cost is measured apart (as many GETs again, nothing running)
and `cpu_ms_per_job_net` leaves it out. Then a burst of --burst one-job workflows from 4 threads (a loaded loop,
where work shares commits and round trips) gives `burst`: the same figures per job under load.
It prints one JSON line of figures per job. `--nats r3-secure` runs the stack on the shipped secure R3 layout (three
servers from ops/nats: TLS, users, encrypted store; `nats` CPU is the three servers'), `--nats r3` on three bare ones;
`--nats r1,r3-secure` measures on each in turn and puts each process's CPU a job side by side (a cost table's columns).

    .venv/bin/python ops/bench/job_cost.py [--jobs 30] [--burst 200] [--nats r1,r3-secure]
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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import nats

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from e2e import ENDED, ONE_JOB, Layout, Stack, drained, layout_list, nats_layout, submit, wait_ended  # noqa: E402 - ops/bench

from adapters.nats_auth import role_url  # noqa: E402
from adapters.nats_tls import connect_options  # noqa: E402

SAMPLE = re.compile(r'^(roving_log_commits_total|roving_log_batches_total|roving_log_requests_total|'
                    r'roving_http_requests_total|roving_scheduler_pass_seconds_count|roving_scheduler_pass_seconds_sum)'
                    r'(?:\{([^}]*)\})? ([0-9.e+]+)$', re.M)


def counters(client: httpx.Client) -> Counter:
    """Commits, batches, log requests by kind, and HTTP requests by who asked: the agent's routes apart."""
    found: Counter = Counter()
    for name, labels, value in SAMPLE.findall(client.get("/metrics").text):
        if name == "roving_http_requests_total":
            route = re.search(r'route="([^"]*)"', labels)
            who = "agent" if route and route.group(1).startswith("/v4/agent") else "other"
            found[f"http_{who}"] += float(value)
        elif name.startswith("roving_scheduler_pass_seconds"):
            found["passes" if name.endswith("count") else "pass_seconds"] += float(value)
        elif name == "roving_log_requests_total":
            found["log_" + re.search(r'kind="([^"]*)"', labels).group(1)] += float(value)
        else:
            found[name.removeprefix("roving_log_").removesuffix("_total")] += float(value)
    return found


async def stream_state(data_dir: Path, url: str | None) -> dict[str, tuple[int, int]]:
    """Each stream's messages and bytes, read as the control plane reads the log (its credentials, its CA): at `url`,
    or (None) the stack's embedded server."""
    if url is None:
        store = data_dir / "nats"
        port = re.search(r'listen: "127\.0\.0\.1:(\d+)"', (store / "roving.conf").read_text()).group(1)
        url = role_url(f"nats://127.0.0.1:{port}", store, "control")
    nc = await nats.connect(**connect_options(url))
    try:
        return {info.config.name: (info.state.messages, info.state.bytes) for info in await nc.jsm().streams_info()}
    finally:
        await nc.close()


def run_jobs(client: httpx.Client, jobs: int) -> tuple[list[float], int]:
    """Each job submitted once the one before ended; the latencies, and how many polls the bench made."""
    latencies, polls = [], 0
    for _ in range(jobs):
        began = time.monotonic()
        wid = submit(client, ONE_JOB, "cost")
        while True:
            polls += 1
            if client.get(f"/v4/workflows/{wid}").json()["status"] in ENDED:
                break
            time.sleep(0.005)
        latencies.append(time.monotonic() - began)
    return latencies, polls


def polling_cost(stack: Stack, client: httpx.Client, polls: int, wid: str) -> float:
    """Control-plane CPU seconds of the bench's own polls: as many GETs of an ended workflow, nothing running."""
    before = stack.cpu()["control_plane"]
    for _ in range(polls):
        client.get(f"/v4/workflows/{wid}").raise_for_status()
        time.sleep(0.005)
    return stack.cpu()["control_plane"] - before


def burst(stack: Stack, client: httpx.Client, count: int) -> dict:
    """`count` one-job workflows from 4 threads, waited for: the per-job figures of a loaded loop."""
    before, cpu0 = counters(client), stack.cpu()
    token = stack.data_dir / "admin.token"
    clients = [stack.client(token) for _ in range(4)]
    try:
        with ThreadPoolExecutor(4) as pool:
            ids = set(pool.map(lambda n: submit(clients[n % 4], ONE_JOB, "burst"), range(count)))
    finally:
        for one in clients:
            one.close()
    drained(client, 300)
    after, cpu1 = counters(client), stack.cpu()
    wait_ended(client, ids, 60)  # checked once the figures are read: listings of every workflow are not cheap
    return {**per_job(before, after, count),
            "cpu_ms_per_job": {who: round((cpu1[who] - cpu0[who]) * 1000 / count, 1) for who in cpu0},
            "cpu_ms_per_job_total": round(sum(cpu1[w] - cpu0[w] for w in cpu0) * 1000 / count, 1)}


def per_job(before: Counter, after: Counter, n: int) -> dict:
    keys = ("commits", "batches", "http_agent")
    figures = {f"{key}_per_job": round((after[key] - before[key]) / n, 2) for key in keys}
    passes = after["passes"] - before["passes"]
    figures["scheduler_passes_per_job"] = round(passes / n, 2)
    figures["scheduler_pass_ms"] = round((after["pass_seconds"] - before["pass_seconds"]) * 1000 / max(passes, 1), 2)
    figures["log_requests_per_job"] = {key.removeprefix("log_"): round((after[key] - before[key]) / n, 2)
                                       for key in sorted(after) if key.startswith("log_") and after[key] != before[key]}
    return figures


def submit_and_wait(client: httpx.Client) -> str:
    wid = submit(client, ONE_JOB, "cost")
    wait_ended(client, {wid}, 60, every=0.05)
    return wid


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=30)
    parser.add_argument("--burst", type=int, default=200, help="one-job workflows of the loaded run (0: none)")
    parser.add_argument("--baseline", type=Path, help="a checkout of an earlier commit (git worktree) to measure "
                        "in the same run, first (or second, with --now-first); ratios compare the two (above 1: cheaper now)")
    parser.add_argument("--now-first", action="store_true",
                        help="measure this checkout before the baseline (the later run tends to read cheaper)")
    parser.add_argument("--nats", type=layout_list, default=["r1"],
                        help="the logs to measure on, in turn, comma-separated: the embedded server (r1, default), "
                        "three bare servers (r3), the shipped secure layout (r3-secure); a fresh one for each stack. "
                        "With more than one, their figures side by side (run both orders: the later run reads cheaper)")
    args = parser.parse_args(argv)
    found = {layout: compare(args, layout) for layout in args.nats}
    print(json.dumps(found[args.nats[0]] if len(found) == 1 else side_by_side(found)))
    return 0


def compare(args: argparse.Namespace, layout: str) -> dict:
    """This checkout's figures on `layout`, beside --baseline's on the same layout when one is given."""
    if args.baseline is None:
        return measure(args, None, layout)
    if args.now_first:  # the second of two runs of the same code reads 10-45% cheaper: run both orders
        now = measure(args, None, layout)
        base = measure(args, args.baseline.resolve(), layout)
    else:
        base = measure(args, args.baseline.resolve(), layout)
        now = measure(args, None, layout)
    return {**now, "baseline": base, "ratio_vs_baseline": ratios(now, base)}


def side_by_side(found: dict[str, dict]) -> dict:
    """Each layout's whole figures, and the per-job CPU of each process beside each other (the cost table's columns)."""
    return {"by_layout": found,
            "cpu_ms_per_job": {name: one["cpu_ms_per_job"] for name, one in found.items()},
            "cpu_ms_per_job_net": {name: one["cpu_ms_per_job_net"] for name, one in found.items()},
            "burst_cpu_ms_per_job": {name: one["burst"]["cpu_ms_per_job"] for name, one in found.items()
                                     if "burst" in one}}


def measure(args: argparse.Namespace, code: Path | None, name: str) -> dict:
    with nats_layout(name) as layout:
        return {"nats": name, **measure_on(args, code, layout)}


def measure_on(args: argparse.Namespace, code: Path | None, layout: Layout) -> dict:
    with tempfile.TemporaryDirectory(prefix="roving-job-cost-") as tmp:
        stack = Stack(Path(tmp), nodes=1, cpus=4, extra={"ROVING_API_WORKERS": "1", **layout.env}, code=code,
                      nats_pids=layout.nats_pids)
        try:
            client = stack.start()
            run_jobs(client, 3)  # warm: the first job pays for imports and connections
            time.sleep(1)
            url = layout.control_url
            before, cpu0, state0 = counters(client), stack.cpu(), asyncio.run(stream_state(stack.data_dir, url))
            latencies, polls = run_jobs(client, args.jobs)
            after, cpu1, state1 = counters(client), stack.cpu(), asyncio.run(stream_state(stack.data_dir, url))
            polled = polling_cost(stack, client, polls, submit_and_wait(client))
            loaded = burst(stack, client, args.burst) if args.burst else None
            client.close()
        finally:
            stack.stop()
    n = args.jobs
    cpu = {who: round((cpu1[who] - cpu0[who]) * 1000 / n, 1) for who in cpu0}
    net = round(sum(cpu1[w] - cpu0[w] for w in cpu0) * 1000 / n - polled * 1000 / n, 1)
    return {
        "jobs": n, **per_job(before, after, n),
        "messages_per_job": {name: round((state1[name][0] - state0.get(name, (0, 0))[0]) / n, 2) for name in state1
                             if state1[name][0] != state0.get(name, (0, 0))[0]},
        "bytes_per_job": {name: round((state1[name][1] - state0.get(name, (0, 0))[1]) / n) for name in state1
                          if state1[name][1] != state0.get(name, (0, 0))[1]},
        "cpu_ms_per_job": cpu, "bench_polls_per_job": round(polls / n, 1),
        "bench_polls_cpu_ms_per_job": round(polled * 1000 / n, 1), "cpu_ms_per_job_net": net,
        "mean_submit_to_end_ms": round(sum(latencies) / n * 1000, 1),
        **({"burst": loaded} if loaded else {}),
    }


def ratios(now: dict, base: dict) -> dict:
    """How many times cheaper (or faster) now than the baseline, each figure measured in this run."""
    def ratio(a: float, b: float) -> float | None:
        return round(b / a, 2) if a and b else None
    found = {"cpu_per_job_net": ratio(now["cpu_ms_per_job_net"], base["cpu_ms_per_job_net"]),
             "submit_to_end": ratio(now["mean_submit_to_end_ms"], base["mean_submit_to_end_ms"])}
    if "burst" in now and "burst" in base:
        found["burst_cpu_per_job"] = ratio(now["burst"]["cpu_ms_per_job_total"], base["burst"]["cpu_ms_per_job_total"])
    return found


if __name__ == "__main__":
    sys.exit(main())

"""A/B of one-job submits during the singles run: two checkouts alternated in one run, one JSON line each.

The second run of the same code on a loaded machine reads 10-45% cheaper than the first, and the load of a
shared machine drifts within minutes, so a change to the submit path is measured as A B B A (or longer, in
that pattern) in one run, never as two separate runs. Each run is e2e.py's one-job burst (N one-job workflows
from T threads on a fresh `roving up`, 2 nodes x 4 cores), with the group commit's batches and commits and the
CPU seconds of each process; the last line gives each side's mean submits/s and the CPU per submit.

    .venv/bin/python ops/bench/submit_ab.py --baseline-code /tmp/base [--jobs 200] [--threads 4] [--order ABBA]

`--baseline-code` is A: an earlier commit's tree (`git archive <commit> | tar -x -C /tmp/base`); B is this one.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import e2e  # noqa: E402 - ops/bench, beside this file

COUNTERS = ("roving_log_batches_total", "roving_log_commits_total")


def one_run(code: Path | None, jobs: int, threads: int, budget: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="roving-bench-submit-ab-") as tmp:
        stack = e2e.Stack(Path(tmp), code=code)
        try:
            client = stack.start()
            time.sleep(1.0)  # the stack's own start-up commits are not the burst's
            before, cpu0 = counters(client), stack.cpu()
            burst = e2e.one_job_burst(stack, client, jobs, threads, budget)
            after, cpu1 = counters(client), stack.cpu()
            client.close()
        finally:
            stack.stop()
    cpu = {name: round(cpu1[name] - cpu0[name], 2) for name in cpu1}
    return {**burst, "batches": after[0] - before[0], "commits": after[1] - before[1], "cpu_seconds": cpu,
            "cpu_ms_per_job": round(1000 * sum(cpu.values()) / jobs, 1)}


def counters(client) -> tuple[float, float]:
    """The group commit's batches and commits so far, from /metrics."""
    found = dict.fromkeys(COUNTERS, 0.0)
    for line in client.get("/metrics").text.splitlines():
        name = line.split("{", 1)[0]
        if name in found:
            found[name] += float(line.rsplit(" ", 1)[1])
    return found[COUNTERS[0]], found[COUNTERS[1]]


def summary(runs: list[tuple[str, dict]]) -> dict:
    sides = {label: [r for got, r in runs if got == label] for label in ("A", "B")}
    return {label: {"runs": len(rs), "submits_per_s": round(statistics.mean(r["submits_per_s"] for r in rs), 1),
                    "cpu_ms_per_job": round(statistics.mean(r["cpu_ms_per_job"] for r in rs), 1)}
            for label, rs in sides.items() if rs}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-code", type=Path, required=True, help="A: the checkout to compare against")
    parser.add_argument("--jobs", type=int, default=200, help="one-job workflows a run (default 200)")
    parser.add_argument("--threads", type=int, default=4, help="submitting threads (default 4, as slurm_peer.py)")
    parser.add_argument("--order", default="ABBA", help="the runs, in order (default ABBA)")
    parser.add_argument("--budget", type=float, default=60.0, help="seconds the jobs may take to end (default 60)")
    args = parser.parse_args(argv)
    if not args.order or set(args.order) - {"A", "B"}:
        parser.error("--order: expected only the letters A and B, e.g. ABBA")
    codes = {"A": args.baseline_code.resolve(), "B": None}
    runs = []
    for label in args.order:
        result = one_run(codes[label], args.jobs, args.threads, args.budget)
        runs.append((label, result))
        print(json.dumps({"side": label, **result}), flush=True)
    print(json.dumps({"bench": "submit_ab", "order": args.order, **summary(runs)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

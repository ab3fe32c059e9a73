"""Where a one-job workflow's time goes under the burst, and how busy that keeps the nodes' slots.

A real local stack (`roving up`, 2 nodes x 4 cores: 8 one-core slots) takes --jobs one-job workflows (`true`) from
4 threads, as ops/bench/e2e.py's burst does; then each workflow's activity (`GET /v4/workflows/ID/events`) gives the
times of its events. It prints one JSON line:

- `gaps_ms`: for each step between two events of a workflow (Placed -> StageNoted, ...), its p50 and p90;
- `slot_hold_ms`: from a job's placement to its recorded end (the event time of `StageFinished`), the time it holds
  its slot, p50 and p90;
- `slot_utilisation`: the slots' held time over 8 slots x the window from the first placement to the last end. Near 1
  the burst is bound by how long a job holds its slot (starting, reporting); well below 1, by how fast the control
  plane places (a slot waits for work);
- `end_to_next_placement_ms`: on each node, from a job's recorded end to the next placement there, p50 and p90.

Event times are the control plane's: a placement's when the scheduler decided it, a report's when the batch that
carried it was taken. Baseline in the same run: `--baseline DIR` measures another checkout first (or second, with
--now-first), with the same figures under `baseline`.

    .venv/bin/python ops/bench/turnover.py [--jobs 200] [--baseline /path/to/worktree]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from e2e import Stack, at, drained, one_job_burst  # noqa: E402 - ops/bench, beside this file

SLOTS = 8  # the stack's 2 nodes x 4 cores, each job one core
PLACED, FINISHED = "Allocation.Placed", "Workflow.StageFinished"


def spread(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"p50": round(statistics.median(ordered), 1), "p90": round(ordered[int(len(ordered) * 0.9)], 1),
            "n": len(ordered)}


def activities(client: httpx.Client, count: int) -> list[list[dict]]:
    ids = [w["id"] for w in client.get(f"/v4/workflows?limit={count}").json()["workflows"]]
    return [client.get(f"/v4/workflows/{wid}/events?limit=500").json().get("events", []) for wid in ids]


def figures(workflows: list[list[dict]]) -> dict:
    gaps: dict[str, list[float]] = defaultdict(list)
    holds: list[float] = []
    by_node: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for events in workflows:
        for before, after in zip(events, events[1:], strict=False):
            gaps[f"{before['type']} -> {after['type']}"].append((at(after["time"]) - at(before["time"])) * 1000)
        placed = next((e for e in events if e["type"] == PLACED), None)
        ended = next((e for e in events if e["type"] == FINISHED), None)
        if placed and ended:
            node = placed["message"].split()[-1]  # "Placed on NODE"
            by_node[node] += [(at(placed["time"]), "placed"), (at(ended["time"]), "ended")]
            holds.append(at(ended["time"]) - at(placed["time"]))
    times, following = [t for marks in by_node.values() for t, _ in marks], next_placements(by_node)
    window = max(times) - min(times) if times else 0.0
    return {
        "gaps_ms": {step: spread(values) for step, values in gaps.items() if len(values) >= len(workflows) // 5},
        "slot_hold_ms": spread([h * 1000 for h in holds]) if holds else {},
        "slot_utilisation": round(sum(holds) / (SLOTS * window), 2) if window else None,
        "end_to_next_placement_ms": spread(following) if following else {},
    }


def next_placements(by_node: dict[str, list[tuple[float, str]]]) -> list[float]:
    found = []
    for marks in by_node.values():
        placements = sorted(t for t, kind in marks if kind == "placed")
        for end in (t for t, kind in marks if kind == "ended"):
            later = [t for t in placements if t >= end]
            if later:
                found.append((later[0] - end) * 1000)
    return found


def measure(code: Path | None, jobs: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="roving-turnover-") as tmp:
        stack = Stack(Path(tmp), code=code)
        try:
            client = stack.start()
            time.sleep(1.0)
            burst = one_job_burst(stack, client, jobs, 4, 120)
            drained(client, 10)
            return {"jobs_per_s": burst["jobs_per_s"], "submits_per_s": burst["submits_per_s"],
                    "failed": burst["failed"], **figures(activities(client, jobs))}
        finally:
            stack.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--baseline", type=Path, help="a checkout of an earlier commit (git worktree) to measure too")
    parser.add_argument("--now-first", action="store_true", help="measure this checkout before the baseline")
    args = parser.parse_args(argv)
    if args.baseline is None:
        print(json.dumps(measure(None, args.jobs)))
        return 0
    if args.now_first:
        now, base = measure(None, args.jobs), measure(args.baseline.resolve(), args.jobs)
    else:
        base, now = measure(args.baseline.resolve(), args.jobs), measure(None, args.jobs)
    print(json.dumps({**now, "baseline": base}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

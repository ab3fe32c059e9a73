"""A cluster's lifetime: memory, lists and restarts as finished history grows (issue 42).

A real local stack (`roving up`, 2 nodes x 4 cores) runs one-job workflows (`true`) in --steps steps of --per-step
each, submitted over HTTP from 4 threads and run to their end by the scheduler and the agents (no event is written
by hand). After each step it measures the control plane's resident memory, `GET /v4/workflows` (the first page as
a client asks for it: its latency and bytes), then stops the stack (SIGTERM: the views' snapshot is saved) and
starts it again on the same data directory: restart-to-ready is from the new process until /readyz answers 200
and every node is READY (the views caught up with the log), and the memory once the restarted stack has listed
the workflows again; `restored` says whether its views began from their snapshot (and its position). With
--baseline the same steps run first on another checkout (main), whose list answers every workflow. It prints
one JSON line.

    .venv/bin/python ops/bench/lifetime.py [--steps 3] [--per-step 1000] [--hot 500] [--baseline /work/main]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from e2e import ONE_JOB, Stack, drained, submit  # noqa: E402 - ops/bench, beside this file

THREADS = 4
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def grow(stack: Stack, client: httpx.Client, count: int, budget: float) -> float:
    """`count` one-job workflows submitted and run to their end; the seconds it took."""
    token = stack.data_dir / "admin.token"
    clients = [stack.client(token) for _ in range(THREADS)]
    began = time.monotonic()
    try:
        with ThreadPoolExecutor(THREADS) as pool:
            list(pool.map(lambda n: submit(clients[n % THREADS], ONE_JOB, f"life-{n}"), range(count)))
    finally:
        for own in clients:
            own.close()
    drained(client, budget)
    return time.monotonic() - began


def listing(client: httpx.Client, tries: int = 5) -> dict:
    """The list's first page as a client asks for it (no parameters): the median latency, its bytes and rows."""
    times, answer = [], None
    for _ in range(tries):
        began = time.perf_counter()
        answer = client.get("/v4/workflows")
        times.append(time.perf_counter() - began)
    assert answer is not None and answer.status_code == 200, answer
    return {"list_s": round(statistics.median(times), 3), "list_bytes": len(answer.content),
            "list_rows": len(answer.json()["workflows"])}


def restart(stack: Stack, code: Path | None, extra: dict[str, str]) -> tuple[Stack, httpx.Client, float]:
    stack.stop()
    began = time.monotonic()
    again = Stack(stack.data_dir, nodes=2, cpus=4, extra=extra, code=code)
    client = again.start(timeout=600)
    while client.get("/readyz").status_code != 200:
        time.sleep(0.05)
    return again, client, round(time.monotonic() - began, 2)


def restored(stack: Stack) -> str:
    """What the restarted views began from, as its log says: the snapshot (its position and seconds) or why not."""
    for line in (stack.data_dir / "stack.log").read_text(errors="replace").splitlines():
        plain = ANSI.sub("", line)
        if "view_snapshot.restored" in plain or "view_snapshot.ignored" in plain:
            return plain.partition("view_snapshot.")[2].strip()[:160]
    return "no snapshot: the whole log replayed"


def measure(args: argparse.Namespace, code: Path | None) -> dict:
    extra = {"ROVING_API_WORKERS": "1", "ROVING_HOT_WORKFLOWS": str(args.hot)}
    steps = []
    with tempfile.TemporaryDirectory(prefix="roving-lifetime-") as tmp:
        stack = Stack(Path(tmp), nodes=2, cpus=4, extra=extra, code=code)
        try:
            client = stack.start(timeout=300)
            for step in range(1, args.steps + 1):
                seconds = grow(stack, client, args.per_step, args.budget)
                time.sleep(2)  # the views and the audit feed settle
                figures = {"finished": step * args.per_step, "grow_s": round(seconds, 1),
                           "rss_mb": rss_mb(stack.process.pid), **listing(client)}
                client.close()
                stack, client, ready_s = restart(stack, code, extra)
                listing(client, tries=1)
                time.sleep(2)
                steps.append({**figures, "restart_to_ready_s": ready_s,
                              "rss_after_restart_mb": rss_mb(stack.process.pid), "restored": restored(stack)})
                print(json.dumps({"step": steps[-1], "code": str(code or "this")}), file=sys.stderr)
            client.close()
        finally:
            stack.stop()
    return {"hot_workflows": args.hot, "per_step": args.per_step, "steps": steps,
            "rss_growth_kb_per_workflow": growth(steps, "rss_mb"),
            "rss_after_restart_growth_kb_per_workflow": growth(steps, "rss_after_restart_mb")}


def growth(steps: list[dict], key: str) -> float | None:
    """KB of resident memory per finished workflow from the first step to the last."""
    if len(steps) < 2:
        return None
    workflows = steps[-1]["finished"] - steps[0]["finished"]
    return round((steps[-1][key] - steps[0][key]) * 1024 / workflows, 2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--per-step", type=int, default=1000, help="one-job workflows run to their end per step")
    parser.add_argument("--hot", type=int, default=500, help="ROVING_HOT_WORKFLOWS of the measured stack")
    parser.add_argument("--budget", type=float, default=900, help="seconds a step's workflows may take to end")
    parser.add_argument("--baseline", type=Path, help="a checkout of an earlier commit (main) to measure first, "
                        "in the same run")
    args = parser.parse_args(argv)
    now = measure(args, None) if args.baseline is None else None
    if args.baseline is not None:
        base = measure(args, args.baseline.resolve())
        now = measure(args, None)
        print(json.dumps({"bench": "lifetime", **now, "baseline": base}))
        return 0
    print(json.dumps({"bench": "lifetime", **(now or {})}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

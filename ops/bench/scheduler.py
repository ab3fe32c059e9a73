"""Scheduler benchmark: one pass at 1k, 10k and 100k queued allocations over 2,000 nodes, plus a simulation.

Prints ONE JSON line: median pass times, the log-log growth exponent, and simulated utilization and
head-job wait with backfill on and off over the same synthetic trace.
"""
from __future__ import annotations

import json
import math
import random
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from domain.scheduler import (  # noqa: E402
    GroupPolicy,
    Kind,
    NodeView,
    QueuedAllocation,
    RunningAllocation,
    SchedulerConfig,
    Snapshot,
    schedule,
)
from domain.scheduler.simulator import SimJob, Simulator  # noqa: E402

T0 = datetime(2025, 1, 1, tzinfo=UTC)
GiB = 1 << 30
SHAPES = [(1, 4), (2, 8), (4, 16), (8, 32), (16, 64), (32, 128)]
GROUPS = ["research", "prod", "batch"]


def cluster(n_nodes: int) -> list[NodeView]:
    nodes = []
    for i in range(n_nodes):
        gpu = i % 5 == 0
        nodes.append(NodeView(
            id=f"n{i:05d}", name=f"n{i:05d}", definition_id="gpu" if gpu else "cpu", cpu=64, memory=256 * GiB,
            devices={"nvidia.com/gpu": 8} if gpu else {}, annotations={"gpu.model": "h100"} if gpu else {}))
    return nodes


def allocation(rng: random.Random, i: int, running: bool = False, nodes=None):
    cpu, mem = rng.choice(SHAPES)
    gpu = rng.random() < 0.15
    fields = dict(
        id=f"{'r' if running else 'q'}{i}", workflow_id=f"w{i // 4}", stage=f"s{i % 4}",
        kind=Kind.SERVICE if rng.random() < 0.03 else Kind.JOB, group_id=rng.choice(GROUPS),
        organization_priority=rng.randint(0, 40), user_priority=rng.randint(0, 5),
        submitted_at=T0 - timedelta(seconds=rng.randint(0, 86_400)), cpu=cpu, memory=mem * GiB,
        devices={"nvidia.com/gpu": rng.choice([1, 2, 8])} if gpu else {},
        annotations={"gpu.model": "h100"} if gpu else {},
        execute_timeout=rng.choice([None, 600, 3600, 14_400]), preemptible=rng.random() < 0.5,
        nodes=4 if rng.random() < 0.01 else 1)
    if not running:
        return QueuedAllocation(**fields)
    started = T0 - timedelta(seconds=rng.randint(0, 7200))
    timeout = fields["execute_timeout"] or 86_400
    return RunningAllocation(**dict(fields, nodes=1, execute_timeout=timeout), node_ids=nodes,
                             started_at=started, deadline=started + timedelta(seconds=timeout))


def snapshot(n_queued: int, n_nodes: int = 2000, seed: int = 7) -> Snapshot:
    rng = random.Random(seed)
    nodes = cluster(n_nodes)
    running = []
    for view in nodes:   # leave ~85% of the cpu busy
        used = 0
        while used < 54:
            r = allocation(rng, len(running), running=True, nodes=(view.id,))
            if r.devices and not view.devices or used + r.cpu > 64:
                break
            running.append(r)
            used += r.cpu
    queued = tuple(allocation(rng, i) for i in range(n_queued))
    policies = tuple(GroupPolicy(group_id=g, may_preempt=("batch",)) for g in GROUPS)
    return Snapshot(queued=queued, running=tuple(running), nodes=tuple(nodes), group_policies=policies)


def timed_pass(n_queued: int, runs: int) -> float:
    snap = snapshot(n_queued)
    config = SchedulerConfig(backfill_enabled=True, preemption_enabled=True)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        schedule(snap, config, T0)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def trace(seed: int = 3) -> tuple[list[NodeView], list[SimJob], str]:
    """A full cluster, a wide high-priority head arriving into it, then a stream of small jobs.

    Walltimes are accurate for timed jobs (runtime == timeout); a fifth of the small jobs have none.
    """
    rng = random.Random(seed)
    nodes = [NodeView(id=f"n{i}", name=f"n{i}", cpu=32, memory=128 * GiB) for i in range(16)]
    jobs = []
    for i in range(32):
        runtime = rng.randint(1800, 4 * 3600)
        jobs.append(SimJob(allocation=QueuedAllocation(
            id=f"init{i}", workflow_id=f"wi{i}", stage="main", submitted_at=T0, cpu=16, memory=32 * GiB,
            execute_timeout=runtime, user_priority=50), runtime=runtime))
    head = QueuedAllocation(id="wide", workflow_id="wwide", stage="train", submitted_at=T0 + timedelta(seconds=60),
                            cpu=32, memory=64 * GiB, nodes=8, execute_timeout=7200, organization_priority=100)
    jobs.append(SimJob(allocation=head, runtime=7200))
    for i in range(600):
        runtime = rng.randint(300, 5400)
        timeout = None if rng.random() < 0.2 else runtime
        cpu = rng.choice([4, 8, 16])
        jobs.append(SimJob(allocation=QueuedAllocation(
            id=f"j{i}", workflow_id=f"w{i}", stage="main", submitted_at=T0 + timedelta(seconds=120 + i * 40),
            cpu=cpu, memory=cpu * 2 * GiB, execute_timeout=timeout, user_priority=rng.randint(0, 3)),
            runtime=runtime))
    return nodes, jobs, "wide"


def simulate(backfill: bool) -> dict:
    nodes, jobs, head = trace()
    result = Simulator(nodes, jobs, SchedulerConfig(backfill_enabled=backfill)).run()
    submitted = next(j.allocation.submitted_at for j in jobs if j.allocation.id == head)
    predicted = result.predicted_start.get(head)
    return {"utilization": round(result.utilization, 4), "head_wait_s": result.wait_seconds(head, submitted),
            "head_predicted_wait_s": (predicted - submitted).total_seconds() if predicted else None,
            "makespan_s": result.makespan_seconds, "passes": result.passes}


def main() -> None:
    sizes = {1_000: 7, 10_000: 5, 100_000: 3}
    seconds = {n: timed_pass(n, runs) for n, runs in sizes.items()}
    xs = [math.log(n) for n in seconds]
    ys = [math.log(t) for t in seconds.values()]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)
    on, off = simulate(True), simulate(False)
    print(json.dumps({
        "nodes": 2000, "backfill": True, "preemption": True,
        "pass_ms": {f"{n // 1000}k": round(t * 1000, 1) for n, t in seconds.items()},
        "growth_exponent": round(slope, 3),
        "sim": {"backfill_on": on, "backfill_off": off},
    }))


if __name__ == "__main__":
    main()

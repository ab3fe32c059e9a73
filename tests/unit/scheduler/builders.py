"""Small builders for scheduler tests: nodes, queued and running allocations at fixed times."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

from domain.scheduler import NodeView, QueuedAllocation, RunningAllocation, Snapshot

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
GiB = 1 << 30


def node(node_id: str, cpu: int = 8, memory: int = 32 * GiB, **fields) -> NodeView:
    return NodeView(id=node_id, name=node_id, cpu=cpu, memory=memory, **fields)


def job(job_id: str, cpu: int = 1, minutes_ago: float = 0, **fields) -> QueuedAllocation:
    fields.setdefault("workflow_id", f"wf-{job_id}")
    return QueuedAllocation(id=job_id, stage=job_id, cpu=cpu,
                            submitted_at=T0 - timedelta(minutes=minutes_ago), **fields)


def running(job_id: str, nodes: tuple[str, ...], cpu: int = 1, started_minutes_ago: float = 10,
            ends_in_minutes: float | None = None, **fields) -> RunningAllocation:
    fields.setdefault("workflow_id", f"wf-{job_id}")
    started = T0 - timedelta(minutes=started_minutes_ago)
    deadline = None if ends_in_minutes is None else T0 + timedelta(minutes=ends_in_minutes)
    timeout = None if deadline is None else int((deadline - started).total_seconds())
    return RunningAllocation(id=job_id, stage=job_id, cpu=cpu, submitted_at=started, node_ids=nodes,
                             started_at=started, deadline=deadline, execute_timeout=timeout, **fields)


def snap(queued=(), running_=(), nodes=(), **fields) -> Snapshot:
    return Snapshot(queued=tuple(queued), running=tuple(running_), nodes=tuple(nodes), **fields)

"""A queue row as answers show it, the scheduler's value for one allocation, and which rows a filtered page holds.

Rows and values are made from the mirrored `Allocation`, its workflow's owner and its resolved priority inputs;
projections.queue keeps them per allocation and orders them."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any
from uuid import UUID

import msgspec

from domain.allocation import Allocation
from domain.scheduler.snapshot import Kind, QueuedAllocation
from projections.workflows import Owner


class QueueRow(msgspec.Struct, frozen=True, kw_only=True):
    id: UUID
    workflow_id: UUID
    stage: str
    attempt: int
    state: str
    priority: float
    priority_inputs: dict[str, int]
    node: str | None
    nodes: list[str]
    node_ids: list[str]
    epoch: int
    preemptible: bool
    resources: dict[str, Any]
    execute_timeout_seconds: float | None
    queued_at: datetime
    started_at: datetime | None
    ended_at: datetime | None
    organization_id: str
    group_id: str
    user_id: str
    exit_code: int | None
    reason: str
    project: str = ""


class Entry:
    """One allocation prepared for the queue: its row (priority still to fill in) and its scheduler value."""

    __slots__ = ("id", "row", "queued", "order")

    def __init__(self, row: QueueRow, queued: QueuedAllocation) -> None:
        self.id, self.row, self.queued = row.id, row, queued
        self.order = (row.queued_at, str(row.id))  # the tie-break after priority: longest waiting, then id


def to_queued(a: Allocation, owner: Owner, inputs: dict[str, int], kind: Kind = Kind.JOB) -> QueuedAllocation:
    """The scheduler's value for one allocation (priority inputs already resolved)."""
    r = a.resources
    timeout = a.execute_timeout_seconds
    return QueuedAllocation(
        id=str(a.id), workflow_id=str(a.workflow_id), stage=a.stage, kind=kind,
        organization_id=owner.organization_id, group_id=owner.group_id, user_id=owner.user_id,
        workflow_priority=inputs.get("workflow", 0), organization_priority=inputs.get("organization", 0),
        group_priority=inputs.get("group", 0), user_priority=inputs.get("user", 0), submitted_at=a.requested_at,
        cpu=r.cpu_cores, memory=r.memory_bytes, devices=dict(r.devices), annotations=dict(r.annotations),
        exclusive=r.exclusive, nodes=r.nodes,
        execute_timeout=int(timeout) if timeout is not None and math.isfinite(timeout) else timeout, preemptible=a.preemptible,
        project=owner.project, shared=dict(r.shared),
    )


def queue_row(a: Allocation, owner: Owner, inputs: dict[str, int], node_names: dict[str, str]) -> QueueRow:
    """The allocation's row with priority 0; readers fill in the effective priority."""
    names = [node_names.get(n, n) for n in a.nodes]
    return QueueRow(
        id=a.id, workflow_id=a.workflow_id, stage=a.stage, attempt=a.attempt, state=a.state.value,
        priority=0.0, priority_inputs=inputs, node=names[0] if names else None, nodes=names,
        node_ids=list(a.nodes), epoch=a.epoch, preemptible=a.preemptible, resources=msgspec.to_builtins(a.resources),
        execute_timeout_seconds=a.execute_timeout_seconds, queued_at=a.requested_at, started_at=a.started_at,
        ended_at=a.ended_at, organization_id=owner.organization_id, group_id=owner.group_id,
        user_id=owner.user_id, exit_code=a.exit_code, reason=a.reason, project=owner.project,
    )


def matching(ordered: list[tuple[float, Entry]], owner: str | None, organization_id: Any, user_id: Any,
             priority_min: float | None, limit: int | None) -> tuple[list[tuple[float, Entry]], int]:
    """The first `limit` of the (priority, entry) pairs that pass the filters (all when None), and how many pass."""
    organization_id = str(organization_id) if organization_id is not None else None
    user_id = str(user_id) if user_id is not None else None
    if owner is None and organization_id is None and user_id is None and priority_min is None:
        return ordered if limit is None else ordered[:limit], len(ordered)
    chosen: list[tuple[float, Entry]] = []
    total = 0
    for priority, entry in ordered:
        r = entry.row
        if ((owner is None or owner in (r.user_id, r.group_id))
                and (organization_id is None or r.organization_id == organization_id)
                and (user_id is None or r.user_id == user_id)
                and (priority_min is None or priority >= priority_min)):
            total += 1
            if limit is None or len(chosen) < limit:
                chosen.append((priority, entry))
    return chosen, total

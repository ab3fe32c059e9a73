"""The queue view: every allocation with its state, placement, owner and effective priority, plus queue stats.

Priority inputs follow the tenancy as it is now (an organization's new priority moves its queued work at
once); the allocation's recorded inputs stand in for owners this view has not seen. The effective
priority is the configured CEL expression's, unless the scheduler runner pushed the figures it ranked by.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timezone
from typing import Any
from uuid import UUID

import msgspec

from domain.allocation import Allocation, QueueState
from domain.scheduler.priority import DEFAULT_PRIORITY, Evaluator, PriorityError
from domain.scheduler.snapshot import Kind, QueuedAllocation
from projections.base import Mirror, Projection, on
from projections.workflows import Owner, owner_of

TENANT_EVENTS = ("Organization.PriorityUpdated", "Group.PriorityUpdated", "User.PriorityUpdated")


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


def to_queued(a: Allocation, owner: Owner, inputs: dict[str, int], kind: Kind = Kind.JOB) -> QueuedAllocation:
    """The scheduler's value for one allocation (priority inputs already resolved)."""
    r = a.resources
    timeout = a.execute_timeout_seconds
    return QueuedAllocation(
        id=str(a.id), workflow_id=str(a.workflow_id), stage=a.stage, kind=kind,
        organization_id=owner.organization_id, group_id=owner.group_id, user_id=owner.user_id,
        workflow_priority=inputs.get("workflow", 0), organization_priority=inputs.get("organization", 0),
        group_priority=inputs.get("group", 0), user_priority=inputs.get("user", 0), submitted_at=a.requested_at,
        cpu=int(r.get("cpu_cores", r.get("cpu", 1))), memory=int(r.get("memory_bytes", r.get("memory", 0))),
        devices=dict(r.get("devices", {})), annotations=dict(r.get("annotations", {})),
        exclusive=bool(r.get("exclusive", False)), nodes=int(r.get("nodes", 1)),
        execute_timeout=int(timeout) if timeout is not None else None, preemptible=a.preemptible,
    )


class QueueView(Projection):
    """Allocations by id, mirrored from the Allocation aggregate."""

    def __init__(self, lock: Any = None) -> None:
        super().__init__(lock)
        self.mirror = Mirror()
        self.owners: dict[UUID, Owner] = {}
        self.tenant_priority: dict[str, int] = {}
        self.tenant_names: dict[str, str] = {}
        self.node_names: dict[str, str] = {}
        self.expression = DEFAULT_PRIORITY
        self.pushed: dict[str, float] = {}
        self.pass_stats: dict[str, Any] = {}
        self.readied: dict[str, datetime] = {}

    def set_priorities(self, priorities: dict[Any, float]) -> None:
        """The runner's computed priorities (allocation id -> value), shown instead of recomputing."""
        with self.lock:
            self.pushed = {str(k): float(v) for k, v in priorities.items()}

    def set_pass_stats(self, stats: dict[str, Any]) -> None:
        with self.lock:
            self.pass_stats = dict(stats)

    def allocation(self, allocation_id: UUID | str) -> Allocation | None:
        return self.mirror.get(allocation_id)

    def allocations(self) -> list[Allocation]:
        with self.lock:
            return self.mirror.values()

    def owner(self, workflow_id: UUID) -> Owner:
        return self.owners.get(workflow_id, Owner())

    def inputs(self, a: Allocation) -> dict[str, int]:
        """Priority inputs: the tenancy's current figures where known, else what the allocation recorded."""
        owner, recorded = self.owner(a.workflow_id), dict(a.priority)
        for key, value in (("organization", owner.organization_id), ("group", owner.group_id), ("user", owner.user_id)):
            tenant = self.tenant_names.get(f"{key}:{value}", value)
            if tenant in self.tenant_priority:
                recorded[key] = self.tenant_priority[tenant]
        return recorded

    def ready_since(self, allocation_id: UUID | str) -> datetime | None:
        """When the allocation last became READY (its wait for placement starts there)."""
        with self.lock:
            found = self.readied.get(str(allocation_id))
            if found is None:
                a = self.allocation(allocation_id)
                found = a.requested_at if a is not None else None
            return found

    def live_allocations_of(self, kind: str, owner_id: UUID | str) -> list[UUID]:
        """Queued and running allocations of an organization, group or user (the priority change provider)."""
        wanted = str(owner_id)
        with self.lock:
            return [a.id for a in self.mirror.values() if not a.ended
                    and getattr(self.owner(a.workflow_id), f"{kind}_id", None) == wanted]

    def get(self, allocation_id: UUID | str, now: datetime | None = None) -> QueueRow | None:
        with self.lock:
            a = self.allocation(allocation_id)
            return self._row(a, self._evaluator(), now or _now()) if a else None

    def rows(self, state: str | None = None, owner: str | None = None, priority_min: float | None = None,
             organization_id: str | None = None, user_id: str | None = None,
             now: datetime | None = None) -> list[QueueRow]:
        """Allocations, highest effective priority first (then the longest waiting)."""
        with self.lock:
            evaluate, when = self._evaluator(), now or _now()
            rows = [self._row(a, evaluate, when) for a in self.mirror.values()
                    if state is None or a.state.value == state.upper()]
        rows = [r for r in rows if (owner is None or owner in (r.user_id, r.group_id))
                and (organization_id is None or r.organization_id == str(organization_id))
                and (user_id is None or r.user_id == str(user_id))
                and (priority_min is None or r.priority >= priority_min)]
        return sorted(rows, key=lambda r: (-r.priority, r.queued_at, str(r.id)))

    def stats(self) -> dict[str, Any]:
        """Depth per queue state and the scheduler's last pass figures."""
        with self.lock:
            depth = Counter(a.state.value for a in self.mirror.values())
            return {"depth": {s.value: depth.get(s.value, 0) for s in QueueState},
                    "total": sum(depth.values()), "priority": self.expression, "last_pass": dict(self.pass_stats)}

    def _evaluator(self) -> Evaluator:
        try:
            return Evaluator(self.expression)
        except PriorityError:
            return Evaluator(DEFAULT_PRIORITY)

    def _row(self, a: Allocation, evaluate: Evaluator, now: datetime) -> QueueRow:
        owner, inputs = self.owner(a.workflow_id), self.inputs(a)
        priority = self.pushed.get(str(a.id))
        if priority is None:
            priority = evaluate(to_queued(a, owner, inputs), now)
        names = [self.node_names.get(n, n) for n in a.nodes]
        return QueueRow(
            id=a.id, workflow_id=a.workflow_id, stage=a.stage, attempt=a.attempt, state=a.state.value,
            priority=priority, priority_inputs=inputs, node=names[0] if names else None, nodes=names,
            node_ids=list(a.nodes), epoch=a.epoch, preemptible=a.preemptible, resources=dict(a.resources),
            execute_timeout_seconds=a.execute_timeout_seconds, queued_at=a.requested_at, started_at=a.started_at,
            ended_at=a.ended_at, organization_id=owner.organization_id, group_id=owner.group_id,
            user_id=owner.user_id, exit_code=a.exit_code, reason=a.reason,
        )

    @on("Allocation.*")
    def _replay(self, event: Any) -> None:
        self.mirror.apply(event)

    @on("Allocation.Readied")
    def _readied(self, event: Any) -> None:
        self.readied[str(event.originator_id)] = event.at

    @on("Allocation.Ended")
    def _ended(self, event: Any) -> None:
        self.readied.pop(str(event.originator_id), None)

    @on("Workflow.Submitted")
    def _submitted(self, event: Any) -> None:
        self.owners[event.originator_id] = owner_of(event.owner)

    @on(*TENANT_EVENTS)
    def _tenant_priority(self, event: Any) -> None:
        self.tenant_priority[str(event.originator_id)] = event.new

    @on("Organization.Created", "Group.Created")
    def _tenant_named(self, event: Any) -> None:
        kind = type(event).__qualname__.split(".")[0].lower()
        self.tenant_names[f"{kind}:{event.name}"] = str(event.originator_id)

    @on("User.Registered")
    def _user_named(self, event: Any) -> None:
        self.tenant_names[f"user:{event.username}"] = str(event.originator_id)

    @on("ClusterConfig.Changed")
    def _config(self, event: Any) -> None:
        if "scheduler.priority" in event.changes:
            self.expression = event.changes["scheduler.priority"] or DEFAULT_PRIORITY

    @on("Node.NodeRegistered")
    def _node(self, event: Any) -> None:
        self.node_names[str(event.originator_id)] = event.name


def _now() -> datetime:
    return datetime.now(timezone.utc)


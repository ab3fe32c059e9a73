"""The queue view: every allocation with its state, placement, owner and effective priority, plus queue stats.

Priority inputs follow the tenancy as it is now (an organization's new priority moves its queued work at
once); the allocation's recorded inputs stand in for owners this view has not seen. The effective
priority is the configured CEL expression's, unless the scheduler runner pushed the figures it ranked by.

Reads are served from caches kept beside the mirror: one prepared entry per allocation (its row without the
priority and its scheduler value), rebuilt only when an event touches it; allocation ids by queue state; the
priorities, evaluated once per change and, when the expression reads the waited time, again at most once a
second; and the sorted order per state selection, so a page of the queue materialises only its own rows.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import msgspec

from domain.allocation import Allocation, QueueState
from domain.scheduler.priority import DEFAULT_PRIORITY, Evaluator, PriorityError
from domain.scheduler.snapshot import Kind, QueuedAllocation
from projections.base import Mirror, Projection, as_uuid, on
from projections.workflows import Owner, owner_of

TENANT_EVENTS = ("Organization.PriorityUpdated", "Group.PriorityUpdated", "User.PriorityUpdated")
LIVE = frozenset({"PENDING", "READY", "RUNNING"})
WAITED = frozenset({"waited_seconds", "waited_hours"})
REPRICE_SECONDS = 1.0  # a time-dependent expression is re-evaluated at most this often (when `now` is not given)


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


class _Entry:
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
        cpu=int(r.get("cpu_cores", r.get("cpu", 1))), memory=int(r.get("memory_bytes", r.get("memory", 0))),
        devices=dict(r.get("devices", {})), annotations=dict(r.get("annotations", {})),
        exclusive=bool(r.get("exclusive", False)), nodes=int(r.get("nodes", 1)),
        execute_timeout=int(timeout) if timeout is not None and math.isfinite(timeout) else timeout, preemptible=a.preemptible,
        project=owner.project, shared=dict(r.get("shared") or {}),
    )


class QueueView(Projection):
    """Allocations by id, mirrored from the Allocation aggregate."""

    transient = ("pushed", "pass_stats", "_entries", "_priorities", "_priced_at", "_priced_mono",
                 "_evaluator_for", "_orders", "_version")

    def __init__(self, lock: Any = None) -> None:
        super().__init__(lock)
        self.mirror: Mirror[Allocation] = Mirror()
        self.owners: dict[UUID, Owner] = {}
        self.tenant_priority: dict[str, int] = {}
        self.tenant_names: dict[str, str] = {}
        self.node_names: dict[str, str] = {}
        self.expression = DEFAULT_PRIORITY
        self.pushed: dict[str, float] = {}
        self.pass_stats: dict[str, Any] = {}
        self.readied: dict[str, datetime] = {}
        # Caches (see the module docstring); every change below bumps `_version`, which drops sorted orders.
        self._state_of: dict[UUID, str] = {}
        self._by_state: dict[str, set[UUID]] = {}
        self._of_workflow: dict[UUID, set[UUID]] = {}
        self._on_node: dict[str, set[UUID]] = {}  # allocations placed on each node (assignments read only these)
        self._entries: dict[UUID, _Entry] = {}
        self._priorities: dict[UUID, float] = {}
        self._priced_at: datetime | None = None
        self._priced_mono: float | None = None
        self._evaluator_for: tuple[str, Evaluator] | None = None
        self._orders: dict[frozenset[str] | None, tuple[int, list[tuple[float, _Entry]]]] = {}
        self._version = 0

    def set_priorities(self, priorities: dict[Any, float]) -> None:
        """The runner's computed priorities (allocation id -> value), shown instead of recomputing."""
        with self.lock:
            pushed = {str(k): float(v) for k, v in priorities.items()}
            for key in pushed.keys() | self.pushed.keys():
                # only the rows whose figure moved are re-read
                if pushed.get(key) != self.pushed.get(key) and (moved := as_uuid(key)) is not None:
                    self._priorities.pop(moved, None)
            self.pushed = pushed
            self._version += 1

    def set_pass_stats(self, stats: dict[str, Any]) -> None:
        with self.lock:
            self.pass_stats = dict(stats)

    def allocation(self, allocation_id: UUID | str) -> Allocation | None:
        return self.mirror.get(allocation_id)

    def allocations(self) -> list[Allocation]:
        with self.lock:
            return self.mirror.values()

    def in_states(self, *states: QueueState) -> list[Allocation]:
        """The allocations in these queue states, from the state index: a pass reads the live queue, not every
        allocation the log ever held."""
        with self.lock:
            return [self.mirror.items[i] for state in states for i in self._by_state.get(state.value, ())]

    def on_node(self, node_id: UUID | str) -> list[Allocation]:
        """The allocations ever placed on a node that its assignments may still name (see `settled`)."""
        with self.lock:
            return [self.mirror.items[i] for i in self._on_node.get(str(node_id), ())]

    def settled(self, node_id: UUID | str, allocation_ids: list[UUID]) -> None:
        """These allocations will never again be named to the node (ended, their workflow too): not read again."""
        with self.lock:
            self._on_node.get(str(node_id), set()).difference_update(allocation_ids)

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
            live = (self.mirror.items[i] for i in self._live_ids())
            return [a.id for a in live if getattr(self.owner(a.workflow_id), f"{kind}_id", None) == wanted]

    def get(self, allocation_id: UUID | str, now: datetime | None = None) -> QueueRow | None:
        with self.lock:
            a = self.allocation(allocation_id)
            if a is None:
                return None
            entry = self._entry(a.id)
            priority = self.pushed.get(str(a.id))
            if priority is None:
                priority = self._evaluator()(entry.queued, now or _now())
            return msgspec.structs.replace(entry.row, priority=priority)

    def rows(self, state: str | None = None, owner: str | None = None, priority_min: float | None = None,
             organization_id: str | None = None, user_id: str | None = None,
             now: datetime | None = None, limit: int | None = None) -> list[QueueRow]:
        """Allocations, highest effective priority first (then the longest waiting); the first `limit` only."""
        return self.page(state=state, owner=owner, priority_min=priority_min, organization_id=organization_id,
                         user_id=user_id, now=now, limit=limit)[0]

    def page(self, state: str | None = None, owner: str | None = None, priority_min: float | None = None,
             organization_id: str | None = None, user_id: str | None = None, now: datetime | None = None,
             limit: int | None = None, live_only: bool = False) -> tuple[list[QueueRow], int]:
        """The first `limit` rows `rows()` would give (all when None) and how many match in all.

        `live_only` keeps PENDING, READY and RUNNING allocations (the queue proper) when no `state` is asked.
        """
        states = frozenset({state.upper()}) if state is not None else LIVE if live_only else None
        organization_id = str(organization_id) if organization_id is not None else None
        user_id = str(user_id) if user_id is not None else None
        with self.lock:
            ordered = self._ordered(states, now)
            if owner is None and organization_id is None and user_id is None and priority_min is None:
                chosen, total = ordered if limit is None else ordered[:limit], len(ordered)
            else:
                chosen, total = [], 0
                for priority, entry in ordered:
                    r = entry.row
                    if ((owner is None or owner in (r.user_id, r.group_id))
                            and (organization_id is None or r.organization_id == organization_id)
                            and (user_id is None or r.user_id == user_id)
                            and (priority_min is None or priority >= priority_min)):
                        total += 1
                        if limit is None or len(chosen) < limit:
                            chosen.append((priority, entry))
            replace = msgspec.structs.replace
            return [replace(entry.row, priority=priority) for priority, entry in chosen], total

    def stats(self) -> dict[str, Any]:
        """Depth per queue state and the scheduler's last pass figures."""
        with self.lock:
            return {"depth": {s.value: len(self._by_state.get(s.value, ())) for s in QueueState},
                    "total": len(self._state_of), "priority": self.expression, "last_pass": dict(self.pass_stats)}

    def _evaluator(self) -> Evaluator:
        if self._evaluator_for is None or self._evaluator_for[0] != self.expression:
            try:
                evaluator = Evaluator(self.expression)
            except PriorityError:
                evaluator = Evaluator(DEFAULT_PRIORITY)
            self._evaluator_for = (self.expression, evaluator)
        return self._evaluator_for[1]

    def _live_ids(self) -> set[UUID]:
        return set().union(*(self._by_state.get(s, ()) for s in LIVE))

    def _entry(self, allocation_id: UUID) -> _Entry:
        entry = self._entries.get(allocation_id)
        if entry is None:
            a = self.mirror.items[allocation_id]
            owner, inputs = self.owner(a.workflow_id), self.inputs(a)
            entry = self._entries[allocation_id] = _Entry(self._row(a, owner, inputs), to_queued(a, owner, inputs))
        return entry

    def _ordered(self, states: frozenset[str] | None, now: datetime | None) -> list[tuple[float, _Entry]]:
        """(priority, entry) for the allocations in `states` (all when None), in queue order; cached."""
        evaluate = self._evaluator()
        when = self._reprice_if_due(now, evaluate)
        cached = self._orders.get(states)
        if cached is not None and cached[0] == self._version:
            return cached[1]
        ids: Iterable[UUID] = (self._state_of if states is None
                               else [i for s in states for i in self._by_state.get(s, ())])
        priorities, pushed = self._priorities, self.pushed
        pairs = []
        for allocation_id in ids:
            entry = self._entry(allocation_id)
            priority = priorities.get(allocation_id)
            if priority is None:
                priority = pushed.get(entry.order[1])
                if priority is None:
                    priority = evaluate(entry.queued, when)
                priorities[allocation_id] = priority
            pairs.append((priority, entry))
        pairs.sort(key=lambda pair: (-pair[0], pair[1].order))
        self._orders[states] = (self._version, pairs)
        return pairs

    def _reprice_if_due(self, now: datetime | None, evaluate: Evaluator) -> datetime:
        """Drop the priorities when they were computed for another moment and the waited time counts; returns the
        moment the priorities are for."""
        if now is not None:
            due = now != self._priced_at
        else:
            due = self._priced_mono is None or time.monotonic() - self._priced_mono >= REPRICE_SECONDS
        if not due and self._priced_at is not None:  # not due: priced before, at a moment kept with the figures
            return self._priced_at
        if self._priced_at is None or WAITED.intersection(evaluate.names):
            self._priorities.clear()
            self._version += 1
        self._priced_at, self._priced_mono = (now, None) if now is not None else (_now(), time.monotonic())
        return self._priced_at

    def _changed(self, allocation_id: UUID) -> None:
        self._entries.pop(allocation_id, None)
        self._priorities.pop(allocation_id, None)
        self._version += 1

    def _changed_all(self, priorities: bool = True) -> None:
        self._entries.clear()
        if priorities:
            self._priorities.clear()
        self._version += 1

    def _row(self, a: Allocation, owner: Owner, inputs: dict[str, int]) -> QueueRow:
        """The allocation's row with priority 0; readers fill in the effective priority."""
        names = [self.node_names.get(n, n) for n in a.nodes]
        return QueueRow(
            id=a.id, workflow_id=a.workflow_id, stage=a.stage, attempt=a.attempt, state=a.state.value,
            priority=0.0, priority_inputs=inputs, node=names[0] if names else None, nodes=names,
            node_ids=list(a.nodes), epoch=a.epoch, preemptible=a.preemptible, resources=dict(a.resources),
            execute_timeout_seconds=a.execute_timeout_seconds, queued_at=a.requested_at, started_at=a.started_at,
            ended_at=a.ended_at, organization_id=owner.organization_id, group_id=owner.group_id,
            user_id=owner.user_id, exit_code=a.exit_code, reason=a.reason, project=owner.project,
        )

    @on("Allocation.*")
    def _replay(self, event: Any) -> None:
        a = self.mirror.apply(event)
        before, after = self._state_of.get(a.id), a.state.value
        if before != after:
            if before is not None:
                self._by_state[before].discard(a.id)
            self._by_state.setdefault(after, set()).add(a.id)
            self._state_of[a.id] = after
        self._of_workflow.setdefault(a.workflow_id, set()).add(a.id)
        for node in a.nodes:
            self._on_node.setdefault(str(node), set()).add(a.id)
        self._changed(a.id)

    @on("Allocation.Readied")
    def _readied(self, event: Any) -> None:
        self.readied[str(event.originator_id)] = event.at

    @on("Allocation.Ended")
    def _ended(self, event: Any) -> None:
        self.readied.pop(str(event.originator_id), None)

    @on("Workflow.Submitted")
    def _submitted(self, event: Any) -> None:
        self.owners[event.originator_id] = owner_of(event.owner)
        for allocation_id in self._of_workflow.get(event.originator_id, ()):
            self._changed(allocation_id)
        self._version += 1

    @on(*TENANT_EVENTS)
    def _tenant_priority(self, event: Any) -> None:
        self.tenant_priority[str(event.originator_id)] = event.new
        self._changed_all()

    @on("Organization.Created", "Group.Created")
    def _tenant_named(self, event: Any) -> None:
        kind = type(event).__qualname__.split(".")[0].lower()
        self.tenant_names[f"{kind}:{event.name}"] = str(event.originator_id)
        self._changed_all()

    @on("User.Registered")
    def _user_named(self, event: Any) -> None:
        self.tenant_names[f"user:{event.username}"] = str(event.originator_id)
        self._changed_all()

    @on("ClusterConfig.Changed")
    def _config(self, event: Any) -> None:
        if "scheduler.priority" in event.changes:
            self.expression = event.changes["scheduler.priority"] or DEFAULT_PRIORITY
            self._priorities.clear()
            self._version += 1

    @on("Node.NodeRegistered")
    def _node(self, event: Any) -> None:
        node_id = str(event.originator_id)
        self.node_names[node_id] = event.name
        for allocation_id in [i for i, e in self._entries.items() if node_id in e.row.node_ids]:
            self._changed(allocation_id)  # only rows placed on the node show its name
        self._version += 1


def _now() -> datetime:
    return datetime.now(UTC)


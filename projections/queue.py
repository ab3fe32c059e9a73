"""The queue view: every allocation with its state, placement, owner and effective priority, plus queue stats.

Priority inputs follow the tenancy as it is now (an organization's new priority moves its queued work at
once); the allocation's recorded inputs stand in for owners this view has not seen. The effective
priority is the configured CEL expression's. The view holds only what the log says: an answer that shows the
figures the scheduler's last pass ranked by passes them in (`ranked`, allocation id as text -> priority), and
they stand in for the expression's for the rows they name.

Reads are served from caches kept beside the mirror: one prepared entry per allocation (its row without the
priority and its scheduler value), rebuilt only when an event touches it; allocation ids by queue state; the
priorities, evaluated once per change and, when the expression reads the waited time, again at most once a
second; and the sorted order per state selection, so a page of the queue materialises only its own rows.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import msgspec

from domain.allocation import Allocation, QueueState
from domain.scheduler.priority import DEFAULT_PRIORITY, Evaluator, PriorityError
from projections import events
from projections.base import Mirror, Projection, on
from projections.queue_rows import Entry, QueueRow, matching, queue_row, to_queued
from projections.workflows import Owner, owner_of

LIVE = frozenset({"PENDING", "READY", "RUNNING"})
WAITED = frozenset({"waited_seconds", "waited_hours"})
REPRICE_SECONDS = 1.0  # a time-dependent expression is re-evaluated at most this often (when `now` is not given)
Ranked = Mapping[str, float]  # the priorities a scheduler pass ranked by, by allocation id as text


class QueueView(Projection):
    """Allocations by id, mirrored from the Allocation aggregate."""

    transient = ("_entries", "_priorities", "_priced_at", "_priced_mono", "_evaluator_for", "_orders", "_version")

    def __init__(self, lock: threading.RLock | None = None) -> None:
        super().__init__(lock)
        self.mirror: Mirror[Allocation] = Mirror()
        self.owners: dict[UUID, Owner] = {}
        self.tenant_priority: dict[str, int] = {}
        self.tenant_names: dict[str, str] = {}
        self.node_names: dict[str, str] = {}
        self.expression = DEFAULT_PRIORITY
        self.readied: dict[str, datetime] = {}
        # Caches (see the module docstring); every change below bumps `_version`, which drops sorted orders.
        self._state_of: dict[UUID, str] = {}
        self._by_state: dict[str, set[UUID]] = {}
        self._of_workflow: dict[UUID, set[UUID]] = {}
        self._on_node: dict[str, set[UUID]] = {}  # allocations placed on each node (assignments read only these)
        self._entries: dict[UUID, Entry] = {}
        self._priorities: dict[UUID, float] = {}  # the expression's figures (never the `ranked` ones)
        self._priced_at: datetime | None = None
        self._priced_mono: float | None = None
        self._evaluator_for: tuple[str, Evaluator] | None = None
        self._orders: dict[frozenset[str] | None, tuple[int, Ranked | None, list[tuple[float, Entry]]]] = {}
        self._version = 0

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

    def running_on(self, node_id: UUID | str) -> list[Allocation]:
        """The allocations running on a node (placed there, not ended): what it holds of its capacity."""
        with self.lock:
            found = (self.mirror.items[i] for i in self._on_node.get(str(node_id), ()))
            return [a for a in found if a.state is QueueState.RUNNING and str(node_id) in a.nodes]

    def settled(self, node_id: UUID | str, allocation_ids: list[UUID]) -> None:
        """These allocations will never again be named to the node (ended, their workflow too): not read again."""
        with self.lock:
            self._on_node.get(str(node_id), set()).difference_update(allocation_ids)

    def of_workflow(self, workflow_id: UUID) -> set[UUID]:
        """The ids of the workflow's allocations (every attempt)."""
        return self._of_workflow.get(workflow_id, set())

    def forget(self, workflow_id: UUID) -> None:
        """Drop a finished workflow's allocations from memory (projections.hot_set decides when)."""
        for allocation_id in self._of_workflow.pop(workflow_id, set()):
            a = self.mirror.items.pop(allocation_id, None)
            state = self._state_of.pop(allocation_id, None)
            if state is not None:
                self._by_state.get(state, set()).discard(allocation_id)
            for node in a.nodes if a is not None else ():
                self._on_node.get(str(node), set()).discard(allocation_id)
            self.readied.pop(str(allocation_id), None)
            self._changed(allocation_id)
        self.owners.pop(workflow_id, None)

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

    def get(self, allocation_id: UUID | str, now: datetime | None = None,
            ranked: Ranked | None = None) -> QueueRow | None:
        with self.lock:
            a = self.allocation(allocation_id)
            if a is None:
                return None
            entry = self._entry(a.id)
            priority = ranked.get(str(a.id)) if ranked else None
            if priority is None:
                priority = self._evaluator()(entry.queued, now or _now())
            return msgspec.structs.replace(entry.row, priority=priority)

    def rows(self, state: str | None = None, owner: str | None = None, priority_min: float | None = None,
             organization_id: str | None = None, user_id: str | None = None,
             now: datetime | None = None, limit: int | None = None, ranked: Ranked | None = None) -> list[QueueRow]:
        """Allocations, highest effective priority first (then the longest waiting); the first `limit` only."""
        return self.page(state=state, owner=owner, priority_min=priority_min, organization_id=organization_id,
                         user_id=user_id, now=now, limit=limit, ranked=ranked)[0]

    def page(self, state: str | None = None, owner: str | None = None, priority_min: float | None = None,
             organization_id: str | None = None, user_id: str | None = None, now: datetime | None = None,
             limit: int | None = None, live_only: bool = False,
             ranked: Ranked | None = None) -> tuple[list[QueueRow], int]:
        """The first `limit` rows `rows()` would give (all when None) and how many match in all.

        `live_only` keeps PENDING, READY and RUNNING allocations (the queue proper) when no `state` is asked;
        `ranked` (the scheduler's last pass's figures) stands in for the expression's where it names a row.
        """
        states = frozenset({state.upper()}) if state is not None else LIVE if live_only else None
        with self.lock:
            ordered = self._ordered(states, now, ranked or None)
            chosen, total = matching(ordered, owner, organization_id, user_id, priority_min, limit)
            replace = msgspec.structs.replace
            return [replace(entry.row, priority=priority) for priority, entry in chosen], total

    def stats(self) -> dict[str, Any]:
        """Depth per queue state, how many allocations in all, and the priority expression."""
        with self.lock:
            return {"depth": {s.value: len(self._by_state.get(s.value, ())) for s in QueueState},
                    "total": len(self._state_of), "priority": self.expression}

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

    def entry(self, allocation_id: UUID) -> Entry:
        """The allocation's prepared row and scheduler value (made as if it were a job); a new Entry whenever an event
        changed what they show."""
        with self.lock:
            return self._entry(allocation_id)

    def _entry(self, allocation_id: UUID) -> Entry:
        entry = self._entries.get(allocation_id)
        if entry is None:
            a = self.mirror.items[allocation_id]
            owner, inputs = self.owner(a.workflow_id), self.inputs(a)
            row = queue_row(a, owner, inputs, self.node_names)
            entry = self._entries[allocation_id] = Entry(row, to_queued(a, owner, inputs))
        return entry

    def _ordered(self, states: frozenset[str] | None, now: datetime | None,
                 ranked: Ranked | None) -> list[tuple[float, Entry]]:
        """(priority, entry) for the allocations in `states` (all when None), in queue order; cached per `ranked`
        (held by the cache, so a later mapping never takes the identity of one the cache compares against)."""
        evaluate = self._evaluator()
        when = self._reprice_if_due(now, evaluate)
        cached = self._orders.get(states)
        if cached is not None and cached[0] == self._version and cached[1] is ranked:
            return cached[2]
        ids: Iterable[UUID] = (self._state_of if states is None
                               else [i for s in states for i in self._by_state.get(s, ())])
        priorities, pairs = self._priorities, []
        for allocation_id in ids:
            entry = self._entry(allocation_id)
            priority = ranked.get(entry.order[1]) if ranked is not None else None
            if priority is None:
                priority = priorities.get(allocation_id)
                if priority is None:
                    priority = priorities[allocation_id] = evaluate(entry.queued, when)
            pairs.append((priority, entry))
        pairs.sort(key=lambda pair: (-pair[0], pair[1].order))
        self._orders[states] = (self._version, ranked, pairs)
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

    @on(Allocation.Event)
    def _replay(self, event: Any) -> None:
        if event.originator_id not in self.mirror.items and event.originator_version > 1:
            return  # an allocation of a cold workflow (projections.hot_set): the log holds what follows
        a = self.mirror.apply(event)
        before, after = self._state_of.get(a.id), a.state.value
        if before != after:
            if after == "READY":  # a Readied, or (newer logs) a Requested that was ready at once
                self.readied[str(a.id)] = event.at
            if before is not None:
                self._by_state[before].discard(a.id)
            self._by_state.setdefault(after, set()).add(a.id)
            self._state_of[a.id] = after
        self._of_workflow.setdefault(a.workflow_id, set()).add(a.id)
        for node in a.nodes:
            self._on_node.setdefault(str(node), set()).add(a.id)
        self._changed(a.id)

    @on(events.Ended)
    def _ended(self, event: Allocation.Ended) -> None:
        self.readied.pop(str(event.originator_id), None)

    @on(events.Submitted)
    def _submitted(self, event: events.Submitted) -> None:
        self.owners[event.originator_id] = owner_of(event.owner)
        for allocation_id in self._of_workflow.get(event.originator_id, ()):
            self._changed(allocation_id)
        self._version += 1

    @on(*events.TENANT_PRIORITY_UPDATED)
    def _tenant_priority(self, event: events.TenantPriorityUpdated) -> None:
        self.tenant_priority[str(event.originator_id)] = event.new
        self._changed_all()

    @on(events.OrganizationCreated, events.GroupCreated)
    def _tenant_named(self, event: events.OrganizationCreated | events.GroupCreated) -> None:
        kind = type(event).__qualname__.split(".")[0].lower()
        self.tenant_names[f"{kind}:{event.name}"] = str(event.originator_id)
        self._changed_all()

    @on(events.UserRegistered)
    def _user_named(self, event: events.UserRegistered) -> None:
        self.tenant_names[f"user:{event.username}"] = str(event.originator_id)
        self._changed_all()

    @on(events.ConfigChanged)
    def _config(self, event: events.ConfigChanged) -> None:
        if "scheduler.priority" in event.changes:
            self.expression = event.changes["scheduler.priority"] or DEFAULT_PRIORITY
            self._priorities.clear()
            self._version += 1

    @on(events.NodeRegistered)
    def _node(self, event: events.NodeRegistered) -> None:
        node_id = str(event.originator_id)
        self.node_names[node_id] = event.name
        for allocation_id in [i for i, e in self._entries.items() if node_id in e.row.node_ids]:
            self._changed(allocation_id)  # only rows placed on the node show its name
        self._version += 1


def _now() -> datetime:
    return datetime.now(UTC)


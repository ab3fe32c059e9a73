"""The workflows view: list, detail with stages, and the activity stream, mirrored from the Workflow aggregate.

Each workflow is rebuilt by replaying its own events, so stage statuses and the workflow status are the
domain's (`Workflow.stage_views()`, `Workflow.status`), never a second reading of the rules.
"""

from __future__ import annotations

import builtins  # `list` is also a method here
import threading
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, Protocol
from uuid import UUID

import msgspec

from domain.allocation import Allocation
from domain.fuzzfile.semantics import StageStatus
from domain.workflow import Workflow
from domain.workflow_stages import StageView
from projections.activity import ActivityRow, activity_rows, skipped_rows
from projections.base import Mirror, Projection, as_uuid, on
from projections.events import (
    AllocationPriorityUpdated,
    Ended,
    NodeRegistered,
    Placed,
    ProfileBound,
    RankExited,
    Readied,
    Requested,
    Requeued,
    SchedulingBlocked,
)
from projections.workflow_pages import ListQuery, encode, matches, page, past_cursor

ENDED = frozenset({"FINISHED", "FAILED", "CANCELED"})


class Owner(msgspec.Struct, frozen=True, kw_only=True):
    organization_id: str = ""
    group_id: str = ""
    user_id: str = ""
    project: str = ""  # the project path its work counts toward ("" before projects existed)


def owner_of(owner: dict[str, str]) -> Owner:
    """The owner dict a workflow was submitted with (`organization_id` or `organization` keys) as ids."""
    def pick(key: str) -> str:
        return str(owner.get(f"{key}_id") or owner.get(key) or "")
    return Owner(organization_id=pick("organization"), group_id=pick("group"), user_id=pick("user"),
                 project=str(owner.get("project") or ""))


class WorkflowRow(msgspec.Struct, frozen=True, kw_only=True):
    id: UUID
    name: str
    status: str
    owner: Owner
    priority: int
    effective_inputs: int
    preemptible: bool | None
    submitted_by: str
    submitted_at: datetime
    updated_at: datetime
    stage_count: int
    stages_ended: int
    annotations: dict[str, str] = {}  # the workflow's own (a preset start records its name and digest here)


class StageRow(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    kind: str
    status: str
    attempts: int
    exit_code: int | None
    node: str | None
    reason: str
    allocation_id: UUID | None
    priority: dict[str, int] | None
    started_at: datetime | None = None  # the current attempt's start on a node (None: it has not started)
    ended_at: datetime | None = None  # when it finished, failed or was canceled after starting


class WorkflowDetail(WorkflowRow, frozen=True, kw_only=True):
    stages: list[StageRow]
    canceled_reason: str | None = None


class StageAllocation(msgspec.Struct, kw_only=True):
    """The stage's latest allocation as the workflows view knows it."""

    id: UUID
    attempt: int
    priority: dict[str, int]


ORDERS: dict[str, tuple[Callable[[WorkflowRow], Any], bool]] = {
    "priority": (lambda r: (r.effective_inputs, -r.submitted_at.timestamp()), True),
    "submitted": (lambda r: r.submitted_at, False),
    "-submitted": (lambda r: r.submitted_at, True),
    "name": (lambda r: r.name, False),
}


class ColdRows(Protocol):
    """Where the list rows of workflows that left the hot set go, and are paged from (adapters.cold_index)."""

    def write(self, rows: Iterable[WorkflowRow]) -> None: ...

    def matching(self, query: ListQuery, keep: Callable[[WorkflowRow], bool] | None, most: int,
                 organization: str | None = None) -> tuple[builtins.list[WorkflowRow], builtins.list[Any] | None]: ...


class WorkflowsView(Projection):
    """Workflows, their stages and activity, by id: the hot set (live work and the most recent finished); a
    colder one is asked of `cold` (projections.cold_workflows), which reads it from the log on demand."""

    transient = ("cold", "cold_rows")

    def __init__(self, lock: threading.RLock | None = None) -> None:
        super().__init__(lock)
        self.mirror: Mirror[Workflow] = Mirror()
        self.updated: dict[UUID, datetime] = {}
        self.activity: dict[UUID, list[ActivityRow]] = {}
        self.current: dict[UUID, dict[str, StageAllocation]] = {}
        self.allocation_stage: dict[UUID, tuple[UUID, str]] = {}
        self.node_names: dict[str, str] = {}
        self.times: dict[UUID, dict[str, list[datetime | None]]] = {}  # stage -> [started, ended] of its attempt
        self.finished: dict[UUID, None] = {}  # ended workflows in the order they ended (projections.hot_set trims)
        self.cold: Callable[[UUID], WorkflowsView | None] | None = None  # a cold workflow's own view, read on demand
        self.cold_rows: ColdRows | None = None  # cold workflows' list rows (adapters.cold_index)

    def workflow(self, workflow_id: UUID | str) -> Workflow | None:
        """The mirrored aggregate (read-only: the assignments and snapshot read stage specs from it)."""
        return self.mirror.get(workflow_id)

    def list(self, visible: Callable[[WorkflowRow], bool] | None = None, status: str | None = None,
             order_by: str | None = None) -> list[WorkflowRow]:
        with self.lock:
            rows = [self._row(w) for w in self.mirror.values()]
        rows = [r for r in rows if (visible is None or visible(r)) and (status is None or r.status == status.upper())]
        key, reverse = ORDERS.get(order_by or "submitted", ORDERS["submitted"])
        return sorted(rows, key=key, reverse=reverse)

    def page(self, query: ListQuery, keep: Callable[[WorkflowRow], bool] | None = None,
             organization: str | None = None) -> tuple[builtins.list[WorkflowRow], str | None]:
        """One page of the rows `keep` (the caller's visibility and owner filters) and the query select, hot and
        cold, in the query's order, and the cursor to the next page (None: this is the last). `organization`
        narrows the cold scan to the one organization a caller can see."""
        with self.lock:
            rows = [self._row(w) for w in self.mirror.values()]
        hot = [r for r in rows if matches(query, r) and past_cursor(query, r) and (keep is None or keep(r))]
        if self.cold_rows is None:
            return page(hot, query)
        ids = {r.id for r in rows}  # a workflow replayed hot again may still have its cold row
        cold, stopped = self.cold_rows.matching(query, keep, query.limit + 1, organization)
        if stopped is not None:  # the cold scan's budget ran out there: this page ends there at the latest
            hot = [r for r in hot if not past_cursor(msgspec.structs.replace(query, after=stopped), r)]
        shown, after = page([*hot, *(r for r in cold if r.id not in ids)], query)
        return shown, after if after is not None or stopped is None else encode(query.order_by, stopped)

    def row(self, workflow_id: UUID) -> WorkflowRow | None:
        workflow = self.workflow(workflow_id)
        return self._row(workflow) if workflow is not None else None

    def get(self, workflow_id: UUID | str) -> WorkflowDetail | None:
        with self.lock:
            workflow = self.workflow(workflow_id)
            if workflow is not None:
                row = self._row(workflow)
                stages = [self._stage(workflow, view) for view in workflow.stage_views()]
        if workflow is None:  # not hot: the log still holds it (read outside the lock, which the tailer needs)
            cold = self._cold(workflow_id)
            return cold.get(workflow_id) if cold is not None else None
        return WorkflowDetail(**msgspec.structs.asdict(row), stages=stages,
                              canceled_reason=workflow.canceled_reason)

    def events(self, workflow_id: UUID | str, since: int = 0) -> builtins.list[ActivityRow]:
        """The workflow's activity rows from the `since`-th on (a follower asks only for what it has not sent)."""
        key = as_uuid(workflow_id)
        if key is None:
            return []
        with self.lock:
            rows = self.activity.get(key)
            hot = key in self.mirror.items
        if not hot:
            cold = self._cold(key)
            return cold.events(key, since) if cold is not None else []
        return (rows or [])[since:]

    def status(self, workflow_id: UUID | str) -> str | None:
        """The workflow's status (None when unknown): in constant time while it is hot, else read from the log."""
        with self.lock:
            workflow = self.workflow(workflow_id)
            if workflow is not None:
                return workflow.status
        found = self.get(workflow_id)
        return found.status if found is not None else None

    def aggregate(self, workflow_id: UUID | str) -> Workflow | None:
        """The workflow as the domain holds it, hot or cold (a cold one is read from the log: call off the loop)."""
        with self.lock:
            found = self.workflow(workflow_id)
        if found is None and (cold := self._cold(workflow_id)) is not None:
            return cold.workflow(workflow_id)
        return found

    def _cold(self, workflow_id: UUID | str) -> WorkflowsView | None:
        key = as_uuid(workflow_id)
        return self.cold(key) if self.cold is not None and key is not None else None

    def forget(self, workflow_id: UUID, allocation_ids: Iterable[UUID]) -> None:
        """Drop a finished workflow from memory (projections.hot_set): it is read from the log when asked for."""
        self.mirror.items.pop(workflow_id, None)
        for table in (self.updated, self.activity, self.current, self.times, self.finished):
            table.pop(workflow_id, None)
        for allocation_id in allocation_ids:
            self.allocation_stage.pop(allocation_id, None)

    def restore_state(self, state: dict[str, Any]) -> None:
        """A snapshot taken before the hot set existed lists no finished workflows: they are found again here."""
        super().restore_state(state)
        if "finished" not in state:
            with self.lock:
                self.finished = {w.id: None for w in self.mirror.values() if w.status in ENDED}

    def current_allocation(self, workflow_id: UUID, stage: str) -> UUID | None:
        found = self.current.get(workflow_id, {}).get(stage)
        return found.id if found else None

    def node_name(self, node: str) -> str:
        return self.node_names.get(str(node), str(node))

    @on(Workflow.Event)
    def _replay(self, event: Workflow.Event) -> None:
        if event.originator_id not in self.mirror.items and event.originator_version > 1:
            return  # a cold workflow's later event: the log holds it, and a cold read replays it from there
        workflow = self.mirror.apply(event)
        if workflow.status in ENDED:
            self.finished.setdefault(workflow.id, None)
        else:
            self.finished.pop(workflow.id, None)
        self.updated[event.originator_id] = getattr(event, "at", None) or event.timestamp
        if type(event).__qualname__ == "Workflow.StepsSkipped":  # a cascade: one line per step it canceled
            self.activity.setdefault(event.originator_id, []).extend(skipped_rows(self.applying, event))
            return
        self._record(event.originator_id, event, getattr(event, "stage", None) or getattr(event, "service", None))
        self._time(event)

    def _time(self, event: Any) -> None:
        """A stage's start and end: a retried or preempted stage starts again with its next attempt."""
        kind, stage = type(event).__name__, getattr(event, "stage", None)
        times = self.times.setdefault(event.originator_id, {})
        if kind == "Canceled":
            for started_ended in times.values():
                started_ended[1] = started_ended[1] or event.at
        elif stage is None:  # not one stage's event
            return
        elif kind == "StageStarted":  # the allocation's Placed (the start) may have said it first: that time stands
            known = times.get(stage)
            times[stage] = known if known is not None and known[1] is None else [event.at, None]
        elif kind in ("StageRetried", "StagePreempted"):
            times.pop(stage, None)
        elif kind in ("StageFinished", "StageFailed", "StageSkipped") and stage in times:
            times[stage][1] = event.at

    @on(Requested)
    def _requested(self, event: Allocation.Requested) -> None:
        if event.workflow_id not in self.mirror.items:
            return  # its workflow is cold (a workflow is always recorded before its allocations)
        self.allocation_stage[event.originator_id] = (event.workflow_id, event.stage)
        stages = self.current.setdefault(event.workflow_id, {})
        known = stages.get(event.stage)
        if known is None or event.attempt >= known.attempt:
            stages[event.stage] = StageAllocation(id=event.originator_id, attempt=event.attempt, priority=dict(event.priority))

    @on(AllocationPriorityUpdated)
    def _priority_updated(self, event: Allocation.PriorityUpdated) -> None:
        """A tenant's priority moved its live allocations: describe shows what the queue uses, not the submission's."""
        placed = self.allocation_stage.get(event.originator_id)
        known = self.current.get(placed[0], {}).get(placed[1]) if placed is not None else None
        if known is not None and known.id == event.originator_id:
            known.priority = {**known.priority, event.kind: event.new}

    @on(Requested, ProfileBound, Readied, Placed,
        Requeued, Ended, AllocationPriorityUpdated, SchedulingBlocked,
        RankExited)
    def _allocation_activity(self, event: Allocation.Event) -> None:
        workflow_id, stage = self.allocation_stage.get(event.originator_id, (None, None))
        if workflow_id is not None:
            self._record(workflow_id, event, stage)

    @on(Allocation.Placed)
    def _placed(self, event: Allocation.Placed) -> None:
        """A placement is the start: the stage shows STARTED on its node at once, though its workflow records the
        start only with the attempt's first report (a placement writes only its allocation)."""
        placed = self.allocation_stage.get(event.originator_id)
        if placed is None:
            return
        workflow_id, stage = placed
        known, workflow = self.current.get(workflow_id, {}).get(stage), self.mirror.get(workflow_id)
        if workflow is None or known is None or known.id != event.originator_id:
            return
        if shown_started(workflow, stage, known.attempt, self.node_name(event.nodes[0]) if event.nodes else ""):
            self.times.setdefault(workflow_id, {})[stage] = [event.at, None]

    @on(NodeRegistered)
    def _node_registered(self, event: NodeRegistered) -> None:
        self.node_names[str(event.originator_id)] = event.name

    def _record(self, workflow_id: UUID, event: Any, stage: str | None) -> None:
        rows = activity_rows(self.applying, event, stage, self.node_name)
        if rows:
            self.activity.setdefault(workflow_id, []).extend(rows)

    def _row(self, w: Workflow) -> WorkflowRow:
        inputs = [a.priority for a in self.current.get(w.id, {}).values()]
        total = max((sum(p.values()) for p in inputs), default=w.priority)
        return WorkflowRow(
            id=w.id, name=w.name, status=w.status, owner=owner_of(w.owner), priority=w.priority,
            effective_inputs=total, preemptible=w.preemptible, submitted_by=w.submitted_by,
            submitted_at=w.submitted_at, updated_at=self.updated.get(w.id, w.submitted_at),
            stage_count=len(w.stages), stages_ended=w.stages_ended,
            annotations=dict(w.definition.annotations or {}),
        )

    def _stage(self, w: Workflow, view: StageView) -> StageRow:
        allocation = self.current.get(w.id, {}).get(view.name)
        return StageRow(
            name=view.name, kind=view.kind, status=view.status.value, attempts=view.attempt,
            exit_code=view.exit_code, node=self.node_name(view.node) if view.node else None, reason=view.reason,
            allocation_id=allocation.id if allocation else None,
            priority=dict(allocation.priority) if allocation else None,
            started_at=times[0] if (times := self.times.get(w.id, {}).get(view.name)) else None,
            ended_at=times[1] if times else None,
        )


def shown_started(workflow: Workflow, stage: str, attempt: int, node: str) -> bool:
    """The view's copy of the workflow shows a READY stage's placed attempt STARTED on `node`, as its own
    `StageStarted` will when a report brings it (which then changes nothing more); False when it moved on."""
    if stage not in workflow.book:
        return False
    state = workflow.book[stage]
    if state.status is not StageStatus.READY or state.attempt != attempt:
        return False
    state.node, state.reason = node, ""
    workflow.book.move(state, StageStatus.STARTED)
    return True

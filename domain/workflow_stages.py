"""The Workflow aggregate's stage bookkeeping: per-step counters, stages materialized when first touched.

A task array of 100,000 tasks is one `StepState` (its template and status counts) until its tasks are
readied one by one; a stage's own `StageState` exists from its first event on, so memory grows with the
tasks that have moved, and every decision reads counters instead of scanning stages. The error the workflow's
commands raise lives here too, beside the state every one of its modules reads.
"""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Any

import msgspec

from domain.fuzzfile import Stage
from domain.fuzzfile.semantics import StageStatus, active_of, outcome_of
from domain.fuzzfile.stages import Step


class WorkflowError(Exception):
    """A command the workflow's current state does not allow; the message says why."""


class StageView(msgspec.Struct, frozen=True):
    """What a user sees of one stage."""

    name: str
    kind: str
    status: StageStatus
    attempt: int
    retries_used: int
    exit_code: int | None
    node: str | None
    reason: str


class ReadyStage(msgspec.Struct, frozen=True):
    """A stage the scheduler may allocate now, with the attempt number its allocation is for."""

    stage: Stage
    attempt: int
    preemptible: bool
    priority: int


class StageState(msgspec.Struct, eq=False):
    """Mutable per-stage state inside the aggregate (rebuilt from events, never stored itself). A Struct, so that a
    command's copy of a long array copies each touched stage in C (identity equality, as a plain object's)."""

    step: StepState
    offset: int
    status: StageStatus
    attempt: int = 1
    retries_used: int = 0
    node_retries_used: int = 0
    exit_code: int | None = None
    node: str | None = None
    reason: str = ""
    by_design: bool = False
    unready: bool = False  # a RUNNING service whose readiness probe fails after it was ready

    def copy_for(self, step: StepState) -> StageState:
        """This state in `step` (a command's copy of its step): every field but `step` is an immutable value."""
        clone = copy.copy(self)
        clone.step = step
        return clone

    @property
    def spec(self) -> Stage:
        """Made on demand: a task's spec is its array's template with its id, never kept per task."""
        return self.step.definition.stage(self.offset)

    @property
    def name(self) -> str:
        return self.step.definition.stage_name(self.offset)

    @property
    def template(self) -> Stage:
        """What every stage of its step shares (dependencies, retry rule, concurrency), without making a spec."""
        return self.step.definition.template

    def view(self) -> StageView:
        """What a user sees of it, with why it waits when no event said why."""
        return StageView(self.name, self.step.kind, self.status, self.attempt, self.retries_used, self.exit_code,
                         self.node, self.reason or self._waiting())

    def _waiting(self) -> str:
        template = self.template
        if self.status is StageStatus.WAITING:
            needs = ", ".join(f"{n.name} {n.status}" for n in template.dependencies)
            return f"Waiting for {needs}"
        if self.status is StageStatus.PENDING and template.concurrency is not None:
            return f"Waiting for a task-array slot (concurrency {template.concurrency})"
        return ""


class StepState:
    """One job, service or task array: how many of its stages are in each status, and those touched so far."""

    __slots__ = ("definition", "index", "initial", "counts", "touched", "cursor", "dependents", "limit", "parked",
                 "scaled_at")

    def __init__(self, definition: Step, index: int) -> None:
        self.definition, self.index = definition, index
        self.initial = StageStatus.WAITING if definition.template.dependencies else StageStatus.PENDING
        # Untouched stages sit in `initial`, so the counts cover every stage without a state per stage.
        self.counts: dict[StageStatus, int] = {self.initial: definition.size}
        self.touched: dict[int, StageState] = {}
        self.cursor = 0  # every offset below it is touched: the search for the next untouched starts here
        self.dependents: list[str] = []
        self.limit: int | None = None  # an autoscaled pool: how many of its stages may be live (its size)
        self.parked: set[int] = set()  # a pool's stages scaled down: PENDING again, the first to start next
        self.scaled_at: datetime | None = None  # when the pool last scaled

    def __deepcopy__(self, memo: dict[int, Any]) -> StepState:
        """A command's copy, made slot by slot: `copy.deepcopy`'s generic walk of every touched stage cost 3.5 ms
        a command on a 400-task array (10 us a stage), which made each report of a long array slower than the last."""
        clone = object.__new__(StepState)
        memo[id(self)] = clone
        clone.definition, clone.index, clone.initial = self.definition, self.index, self.initial
        clone.counts, clone.cursor, clone.dependents = dict(self.counts), self.cursor, list(self.dependents)
        clone.limit, clone.parked, clone.scaled_at = self.limit, set(self.parked), self.scaled_at
        clone.touched = {}
        for offset, state in self.touched.items():
            memo[id(state)] = clone.touched[offset] = state.copy_for(clone)
        return clone

    @property
    def name(self) -> str:
        return self.definition.template.step

    @property
    def kind(self) -> str:
        return self.definition.template.kind

    @property
    def active(self) -> int:
        return active_of(self.counts)

    @property
    def untouched(self) -> int:
        return self.definition.size - len(self.touched)

    def outcome(self) -> str:
        """A pool counts as RUNNING once as many replicas run as its size asks (the rest are not needed)."""
        found = outcome_of(self.counts, self.definition.size)
        if found == "OPEN" and self.limit is not None and self.counts.get(StageStatus.RUNNING, 0) >= self.limit:
            return "RUNNING"
        return found

    def has_slot(self) -> bool:
        if self.limit is not None:
            return self.active < self.limit
        concurrency = self.definition.template.concurrency
        return self.kind != "task" or concurrency is None or self.active < concurrency

    def next_free(self) -> int | None:
        """The next stage to ready: the lowest of a pool's parked stages and the next untouched one."""
        untouched = self.next_untouched()
        candidates = [offset for offset in (min(self.parked, default=None), untouched) if offset is not None]
        return min(candidates, default=None)

    def next_untouched(self) -> int | None:
        """The lowest offset no event has touched yet (tasks are readied in id order, so this is amortized O(1))."""
        while self.cursor < self.definition.size and self.cursor in self.touched:
            self.cursor += 1
        return self.cursor if self.cursor < self.definition.size else None

    def state(self, offset: int, canceled: str | None) -> StageState:
        """The stage's state; an untouched one is made for the caller and not kept."""
        found = self.touched.get(offset)
        if found is not None:
            return found
        if canceled is None:
            return StageState(self, offset, self.initial)
        untouched = StageState(self, offset, StageStatus.CANCELED)
        untouched.reason = canceled
        return untouched

    def touch(self, offset: int) -> StageState:
        found = self.touched.get(offset)
        if found is None:
            found = self.touched[offset] = StageState(self, offset, self.initial)
        return found

    def move(self, state: StageState, status: StageStatus) -> None:
        if status is not StageStatus.PENDING:
            self.parked.discard(state.offset)
        self.counts[state.status] -= 1
        self.counts[status] = self.counts.get(status, 0) + 1
        state.status = status

    def cancel_untouched(self) -> int:
        """Workflow canceled: every stage not yet touched counts as CANCELED (its view says so lazily)."""
        left = self.counts.pop(self.initial, 0)  # touched stages have always moved on from `initial`
        self.counts[StageStatus.CANCELED] = self.counts.get(StageStatus.CANCELED, 0) + left
        return left

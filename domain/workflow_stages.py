"""The Workflow aggregate's stage bookkeeping: per-step counters, stages materialized when first touched.

A task array of 100,000 tasks is one `StepState` (its template and status counts) until its tasks are
readied one by one; a stage's own `StageState` exists from its first event on, so memory grows with the
tasks that have moved, and every decision reads counters instead of scanning stages. The error the workflow's
commands raise lives here too, beside the state every one of its modules reads.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterable, Iterator, Mapping, ValuesView
from datetime import datetime

import msgspec

from domain.fuzzfile import Stage
from domain.fuzzfile.semantics import ENDED, StageStatus, active_of, outcome_of, step_outcome
from domain.fuzzfile.stages import Step

QUIET = (StageStatus.PENDING, StageStatus.WAITING, StageStatus.READY)


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


class StageState:
    """Mutable per-stage state inside the aggregate (rebuilt from events, never stored itself)."""

    __slots__ = ("step", "offset", "status", "attempt", "retries_used", "node_retries_used",
                 "exit_code", "node", "reason", "by_design", "unready")

    def __init__(self, step: StepState, offset: int, status: StageStatus) -> None:
        self.step, self.offset, self.status = step, offset, status
        self.attempt = 1
        self.retries_used = 0
        self.node_retries_used = 0
        self.exit_code: int | None = None
        self.node: str | None = None
        self.reason = ""
        self.by_design = False
        self.unready = False  # a RUNNING service whose readiness probe fails after it was ready

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


class StageBook(Mapping[str, StageState]):
    """`workflow.stages`: every stage by name in definition order, with the counters the workflow decides by.

    Read-only as a mapping; the aggregate's event handlers change it through `touch`, `move` and `cancel`."""

    def __init__(self, steps: list[Step]) -> None:
        self.steps = {step.template.step: StepState(step, i) for i, step in enumerate(steps)}
        for step in self.steps.values():
            for need in step.definition.template.dependencies:
                if need.name in self.steps:
                    self.steps[need.name].dependents.append(step.name)
        self.order = list(self.steps.values())
        self.live: dict[str, StageState] = {}  # READY, STARTED and RUNNING: what may hold an allocation
        self.total = sum(step.definition.size for step in self.order)
        self.ended = self.failed = self.accidental_skips = 0
        self.open_jobs = sum(step.definition.size for step in self.order if step.kind != "service")
        self.stirred = False  # some stage left PENDING/WAITING/READY or was retried: the workflow has started
        self.canceled: str | None = None  # what untouched stages say once the workflow is canceled

    def locate(self, name: str) -> tuple[StepState, int] | None:
        """The step holding stage `name` and its offset there: `job` or `job[task id]`."""
        step = self.steps.get(name) or self.steps.get(name.partition("[")[0])
        if step is None:
            return None
        offset = step.definition.offset(name)
        return None if offset is None else (step, offset)

    def touch(self, name: str) -> StageState:
        found = self.locate(name)
        if found is None:
            raise KeyError(name)
        step, offset = found
        return step.touch(offset)

    def move(self, state: StageState, status: StageStatus) -> None:
        """Every status change goes through here, so the step's and the workflow's counters stay exact."""
        was_ended = state.status in ENDED
        state.step.move(state, status)
        if status.active:
            self.live[state.name] = state
        else:
            self.live.pop(state.name, None)
        if status in ENDED and not was_ended:
            self.ended += 1
            self.failed += status is StageStatus.FAILED
            self.open_jobs -= state.step.kind != "service"
        self.stirred |= status not in QUIET or state.attempt > 1

    def cancel(self, text: str) -> None:
        """Every stage not ended ends CANCELED saying `text`; untouched ones without a state each."""
        self.canceled = text
        parked = [step.touched[offset] for step in self.order for offset in step.parked]
        for state in [*self.live.values(), *parked]:
            state.reason = text
            self.move(state, StageStatus.CANCELED)
        for step in self.order:
            left = step.cancel_untouched()
            self.ended += left
            self.open_jobs -= left if step.kind != "service" else 0

    def outcome(self, step: str) -> str:
        found = self.steps.get(step)
        return found.outcome() if found is not None else step_outcome([])

    def in_order(self, states: Iterable[StageState]) -> list[StageState]:
        return sorted(states, key=lambda s: (s.step.index, s.offset))

    def __getitem__(self, name: str) -> StageState:
        found = self.locate(name)
        if found is None:
            raise KeyError(name)
        step, offset = found
        return step.state(offset, self.canceled)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.locate(name) is not None

    def __iter__(self) -> Iterator[str]:
        for step in self.order:
            for offset in range(step.definition.size):
                yield step.definition.stage_name(offset)

    def __len__(self) -> int:
        return self.total

    def values(self) -> ValuesView[StageState]:
        return _States(self)

    def items(self) -> ItemsView[str, StageState]:
        return _Items(self)

    def states(self) -> Iterator[StageState]:
        """Every stage's state in order, without looking each name up again."""
        for step in self.order:
            for offset in range(step.definition.size):
                yield step.state(offset, self.canceled)


class _States(ValuesView[StageState]):
    """values() without a lookup per name: the stages in order, from their steps."""

    def __init__(self, stages: StageBook) -> None:
        super().__init__(stages)
        self.stages = stages

    def __iter__(self) -> Iterator[StageState]:
        return self.stages.states()


class _Items(ItemsView[str, StageState]):
    def __init__(self, stages: StageBook) -> None:
        super().__init__(stages)
        self.stages = stages

    def __iter__(self) -> Iterator[tuple[str, StageState]]:
        return ((state.name, state) for state in self.stages.states())

"""`workflow.stages`: the Workflow aggregate's book of every step's stages, with the workflow-wide counters.

Each step's own counters and touched stages are `StepState`s (domain/workflow_stages.py); the book routes a stage
name to its step, keeps the live stages (what may hold an allocation) and counts ended, failed and open work.
"""

from __future__ import annotations

import copy
from collections.abc import ItemsView, Iterable, Iterator, Mapping, ValuesView
from typing import Any

from domain.fuzzfile.semantics import ENDED, StageStatus, step_outcome
from domain.fuzzfile.stages import Step
from domain.workflow_stages import StageState, StepState

QUIET = (StageStatus.PENDING, StageStatus.WAITING, StageStatus.READY)


class StageBook(Mapping[str, StageState]):
    """`workflow.stages`: every stage by name in definition order, with the counters the workflow decides by.

    Read-only as a mapping; the aggregate's event handlers change it through `touch`, `move`, `skip` and `cancel`."""

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

    def __deepcopy__(self, memo: dict[int, Any]) -> StageBook:
        """Steps copied by their own fast copy; `live` points at the copies of the states it held."""
        clone = object.__new__(StageBook)
        memo[id(self)] = clone
        for name, value in vars(self).items():
            if name not in ("steps", "order", "live"):
                setattr(clone, name, copy.deepcopy(value, memo))
        clone.steps = {name: copy.deepcopy(step, memo) for name, step in self.steps.items()}
        clone.order = [memo[id(step)] for step in self.order]
        clone.live = {name: copy.deepcopy(state, memo) for name, state in self.live.items()}
        return clone

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

    def skip(self, state: StageState, reason: str, by_design: bool) -> None:
        """A stage that will never run ends CANCELED; one not skipped by design makes the workflow FAILED."""
        state.by_design, state.reason = by_design, reason
        self.accidental_skips += not by_design
        self.move(state, StageStatus.CANCELED)

    def skip_step(self, step: StepState, reason: str, by_design: bool) -> None:
        """Every stage of `step` not yet begun is skipped."""
        while (offset := step.next_free()) is not None:
            self.skip(self.touch(step.definition.stage_name(offset)), reason, by_design)

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

"""How a Workflow moves its stages on after any change: dependents whose conditions hold become READY, those whose
conditions never can are skipped, until nothing moves.

Methods of the aggregate (domain/workflow.py assigns each to the class), kept here by concept: they decide, and
the aggregate's events (StageReadied, StepsSkipped) record what they decided. `self` is the Workflow.
"""

from __future__ import annotations

import heapq
from datetime import datetime
from typing import TYPE_CHECKING, Any

from domain.fuzzfile.semantics import condition
from domain.workflow_stages import StepState

if TYPE_CHECKING:
    from domain.workflow import Workflow


def _advance(self: Workflow, at: datetime, *changed: StepState) -> None:
    """Skip stages whose conditions can never hold, ready those whose conditions hold, until nothing moves.

    Only steps that can move are examined: the changed ones (a freed slot) and, transitively, the
    dependents of any step whose stages moved. Dependencies come first in step order, so taking steps in
    that order settles each at most once, with the events in the order a sweep over every stage gave."""
    steps = self.book.steps
    queue = sorted({step.index for step in changed} | {steps[d].index for s in changed for d in s.dependents})
    queued, skipped = set(queue), list[list[Any]]()
    while queue:
        step = self.book.order[heapq.heappop(queue)]
        if self._settle(step, at, skipped):
            for index in (steps[d].index for d in step.dependents):
                if index not in queued:
                    queued.add(index)
                    heapq.heappush(queue, index)
    self._flush_skips(skipped, at)


def _settle(self: Workflow, step: StepState, at: datetime, skipped: list[list[Any]]) -> bool:
    """Skip a step whose conditions can never hold (every stage of it not yet begun), or ready what may start.
    Skips cascade down a chain in one pass: they are gathered into one StepsSkipped event (a 3,000-job chain's
    failure is one event, where one event per stage overflowed a commit), saved before any readiness after it."""
    if step.next_free() is None:
        return False
    needs = step.definition.template.dependencies
    verdicts = [condition(n.name, n.status, self.book.outcome(n.name)) for n in needs]
    never = next((v for v in verdicts if v.never), None)
    if never is not None:
        reason = f"Canceled: {never.reason}"
        self._skip_step(step, reason, never.by_design)  # now: the steps after it see it canceled
        skipped.append([step.name, reason, never.by_design])
        return True
    self._flush_skips(skipped, at)
    moved = False
    while all(v.holds for v in verdicts) and step.has_slot() and (offset := step.next_free()) is not None:
        self._readied(stage=step.definition.stage_name(offset), by="workflow", at=at)
        moved = True
    return moved


def _flush_skips(self: Workflow, skipped: list[list[Any]], at: datetime) -> None:
    if skipped:
        self._steps_skipped(steps=list(skipped), by="workflow", at=at)
        skipped.clear()

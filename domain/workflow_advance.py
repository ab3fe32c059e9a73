"""How a workflow moves its stages on after a change: which steps can never run (skipped), which stages may start
(readied), cascading down the dependencies until nothing moves.

It decides over the workflow's stage book (domain/workflow_book.py) and has the Workflow aggregate
(domain/workflow.py) record each decision as it is made, through the two callables it is given: `ready` records a
StageReadied (the next decision reads the book it changed), `skip` one StepsSkipped for a run of skipped steps.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

from domain.fuzzfile.semantics import condition
from domain.workflow_book import StageBook
from domain.workflow_stages import StepState

Ready = Callable[[str], None]  # record that a stage is READY
Skip = Callable[[list[list[Any]]], None]  # record steps skipped: [step, reason, by design] each, in the order decided


def advance(book: StageBook, changed: tuple[StepState, ...], ready: Ready, skip: Skip) -> None:
    """Skip stages whose conditions can never hold, ready those whose conditions hold, until nothing moves.

    Only steps that can move are examined: the changed ones (a freed slot) and, transitively, the
    dependents of any step whose stages moved. Dependencies come first in step order, so taking steps in
    that order settles each at most once, with the events in the order a sweep over every stage gave."""
    steps = book.steps
    queue = sorted({step.index for step in changed} | {steps[d].index for s in changed for d in s.dependents})
    queued, skipped = set(queue), list[list[Any]]()
    while queue:
        step = book.order[heapq.heappop(queue)]
        if _settle(book, step, skipped, ready, skip):
            for index in (steps[d].index for d in step.dependents):
                if index not in queued:
                    queued.add(index)
                    heapq.heappush(queue, index)
    _flush(skipped, skip)


def _settle(book: StageBook, step: StepState, skipped: list[list[Any]], ready: Ready, skip: Skip) -> bool:
    """Skip a step whose conditions can never hold (every stage of it not yet begun), or ready what may start.
    Skips cascade down a chain in one pass: they are gathered into one StepsSkipped event (a 3,000-job chain's
    failure is one event, where one event per stage overflowed a commit), saved before any readiness after it."""
    if step.next_free() is None:
        return False
    needs = step.definition.template.dependencies
    verdicts = [condition(n.name, n.status, book.outcome(n.name)) for n in needs]
    never = next((v for v in verdicts if v.never), None)
    if never is not None:
        reason = f"Canceled: {never.reason}"
        book.skip_step(step, reason, never.by_design)  # now: the steps after it see it canceled
        skipped.append([step.name, reason, never.by_design])
        return True
    _flush(skipped, skip)
    moved = False
    while all(v.holds for v in verdicts) and step.has_slot() and (offset := step.next_free()) is not None:
        ready(step.definition.stage_name(offset))
        moved = True
    return moved


def _flush(skipped: list[list[Any]], skip: Skip) -> None:
    if skipped:
        skip(list(skipped))
        skipped.clear()

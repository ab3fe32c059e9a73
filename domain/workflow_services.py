"""A workflow's services: its autoscaled pools and how one scales, and which services its ended jobs no longer need.

Rules over the workflow's stage book (domain/workflow_book.py) and its definition's services; the Workflow
aggregate (domain/workflow.py) asks them, records what they decide (ServiceScaled, StageFinished) and, in its
ServiceScaled handler, has `rescale` change the book.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import NamedTuple

from domain.autoscale import Pool, pool_rule
from domain.fuzzfile.autoscaler import initial_size
from domain.fuzzfile.schema import Service
from domain.fuzzfile.semantics import StageStatus
from domain.workflow_book import QUIET, StageBook
from domain.workflow_stages import StepState, WorkflowError

OPEN = ("OPEN", "RUNNING")  # a step's outcomes while its pool may still scale


class Scaling(NamedTuple):
    """A checked scale step: the pool's step, its size before, and the replicas it stops (highest first)."""

    step: StepState
    from_size: int
    stopped: list[str]


def size_pools(book: StageBook, services: Mapping[str, Service]) -> None:
    """At submission: each autoscaled pool starts at its initial size."""
    for name, service in services.items():
        if service.autoscaler is not None:
            book.steps[name].limit = initial_size(service)


def pools(book: StageBook, services: Mapping[str, Service]) -> list[Pool]:
    """Every autoscaled service still running: its size, rule and last scale step."""
    found = []
    for name, service in services.items():
        step, rule = book.steps[name], pool_rule(service)
        if rule is not None and step.limit is not None and step.outcome() in OPEN:
            found.append(Pool(name, step.limit, rule, step.scaled_at))
    return found


def scaling(book: StageBook, services: Mapping[str, Service], service: str, to: int, workflow: str,
            ended: bool) -> Scaling:
    """Check that `service` of `workflow` (`ended`: canceled) may scale to `to` replicas: shrinking stops the
    highest-numbered live replicas, growing stops none."""
    step = book.steps.get(service)
    rule = pool_rule(services[service]) if step is not None and step.kind == "service" else None
    if step is None or rule is None or step.limit is None:
        raise WorkflowError(f"workflow {workflow} has no autoscaled service named {service}")
    if ended or step.outcome() not in OPEN:
        raise WorkflowError(f"service {service} of workflow {workflow} has ended; it cannot scale")
    if not rule.low <= to <= rule.high:
        raise WorkflowError(f"service {service} scales between {rule.low} and {rule.high} replicas, not to {to}")
    live = sorted((s for s in book.live.values() if s.step is step), key=lambda s: s.offset)
    return Scaling(step, step.limit, [s.name for s in live[to:]][::-1])


def rescale(book: StageBook, service: str, to: int, reason: str, stopped: list[str], at: datetime) -> None:
    """What a ServiceScaled does: the pool's new size; each stopped replica waits, PENDING, to be the first started
    again, as a new attempt (reports of the stopped one are stale)."""
    step = book.steps[service]
    step.limit, step.scaled_at = to, at
    for name in stopped:
        state = book.touch(name)
        state.reason, state.attempt, state.node, state.unready = f"Scaled down: {reason}", state.attempt + 1, None, False
        book.move(state, StageStatus.PENDING)
        step.parked.add(state.offset)


def unneeded_replicas(book: StageBook, step: StepState) -> list[str]:
    """The stages of an autoscaled pool whose last live replica stopped that never run now: the parked and the
    untouched ones, in offset order (none while a replica is live, or for a step that is not a pool)."""
    if step.limit is None or any(s.step is step for s in book.live.values()):
        return []
    size = step.definition.size
    untouched = (offset for offset in range(step.cursor, size) if offset not in step.touched)
    return [step.definition.stage_name(offset) for offset in sorted({*step.parked, *untouched})]


def live_replicas(book: StageBook, service: str) -> list[str]:
    """The stages of `service` that are READY, STARTED or RUNNING."""
    return [s.name for s in book.live.values() if s.template.step == service and s.step.kind == "service"]


def services_to_stop(book: StageBook) -> list[str]:
    """Non-persistent services still up although every job has ended."""
    if book.open_jobs:
        return []
    services = [s for step in book.order if step.kind == "service" for s in step.touched.values()]
    return [s.name for s in services if not s.template.persist and s.status in (StageStatus.STARTED, StageStatus.RUNNING)]


def services_never_needed(book: StageBook) -> list[str]:
    """Non-persistent services that have not started although every job has ended: waiting for a node (a quota, a
    reservation) or for their own dependencies. Nothing can need them any more; started later, they would run on
    alone and the workflow would never end. A workflow of services alone runs them until it is stopped."""
    if book.open_jobs or all(step.kind == "service" for step in book.order):
        return []
    return [state.name for step in book.order if step.kind == "service"
            for state in (step.state(offset, book.canceled) for offset in range(step.definition.size))
            if state.status in QUIET and not state.template.persist]

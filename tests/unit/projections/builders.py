"""Test helpers: real aggregates' events fed to the views with increasing positions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

import msgspec
from eventsourcing.domain import Aggregate

from domain.allocation import Allocation
from domain.fuzzfile import Resources, parse_fuzzfile
from domain.node import Capacity, Node
from domain.workflow import Workflow
from projections.views import Views

T0 = datetime(2025, 1, 1, tzinfo=UTC)
GiB = 1024 ** 3


def wire(answer: Any) -> list[dict[str, Any]]:
    """An assignments answer's run specs as the wire carries them (JSON objects; fields at their default left out)."""
    return msgspec.to_builtins(answer.start)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def uid(name: str) -> UUID:
    return uuid5(NAMESPACE_URL, f"test:{name}")


class Feed:
    """Collects pending events from aggregates and hands them to the views as one numbered batch."""

    def __init__(self, views: Views | None = None) -> None:
        self.views = views or Views()
        self.log: list[tuple[int, object]] = []

    def save(self, *aggregates: Aggregate) -> list[tuple[int, object]]:
        batch = []
        for aggregate in aggregates:
            for event in aggregate.collect_events():
                batch.append((len(self.log) + 1, event))
                self.log.append(batch[-1])
        self.views.apply(batch)
        return batch


def submit(text: str, name: str = "wf", owner: dict[str, str] | None = None, by: str = "alice",
           minute: float = 0, **kwargs) -> Workflow:
    parsed = parse_fuzzfile(text)
    assert parsed.errors == [], parsed.errors
    owner = owner or {"organization": str(uid("org")), "group": str(uid("group")), "user": str(uid("alice"))}
    return Workflow.submit(uid(name), name, parsed.definition, owner, by=by, at=at(minute), **kwargs)


def request(workflow: Workflow, stage: str, attempt: int = 1, minute: float = 0, **priority) -> Allocation:
    spec = workflow.stages[stage].spec
    allocation = Allocation.request(
        uid(f"{workflow.id}:{stage}:{attempt}"), workflow.id, stage, attempt,
        Resources(cpu_cores=spec.resources.cpu_cores, memory_bytes=spec.resources.memory_bytes),
        workflow_priority=workflow.priority, preemptible=False,
        execute_timeout_seconds=spec.execute_timeout_seconds, by="scheduler", at=at(minute), **priority)
    allocation.mark_ready(by="scheduler", at=at(minute))
    return allocation


def node(name: str, cpu: int = 8, memory: int = 32 * GiB, definition: str = "cpu-small",
         annotations: dict[str, str] | None = None, ready: bool = True) -> Node:
    registered = Node.register(uid(name), name, definition, Capacity(cpu=cpu, memory=memory,
                               annotations=annotations or {}), by="agent", at=T0)
    if ready:
        registered.mark_ready(1, by="agent", at=T0)
    return registered


ONE_JOB = "version: v4\njobs:\n  main: {image: {uri: docker://alpine:3.20}, script: 'echo hi'}\n"

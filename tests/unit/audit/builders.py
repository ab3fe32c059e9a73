"""Test helpers: real domain events as numbered, decoded log entries (as the audit feed hands them on)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate
from eventsourcing.persistence import Mapper, Notification

from adapters.audit_feed import LoggedEvents
from adapters.transcoder import MsgspecTranscoder
from domain.allocation import Allocation
from domain.fuzzfile import Resources, parse_fuzzfile
from domain.workflow import Workflow
from projections.audit import LoggedEvent

T0 = datetime(2025, 1, 1, tzinfo=UTC)
FUZZFILE = "version: v4\njobs:\n  main: {image: {uri: docker://alpine:3.20}, script: 'true'}\n"
MAPPER = Mapper(transcoder=MsgspecTranscoder())
DECODE = LoggedEvents()


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


class Log:
    """An in-memory stand-in for one cluster's stream: events get consecutive positions."""

    def __init__(self) -> None:
        self.events: list[tuple[int, LoggedEvent]] = []

    def record(self, *aggregates: Aggregate) -> list[tuple[int, LoggedEvent]]:
        recorded = [self._append(MAPPER.to_stored_event(e)) for a in aggregates for e in a.collect_events()]
        return recorded

    def record_raw(self, topic: str, originator_id: str, version: int, state: dict[str, Any]) -> None:
        self._append(Notification(id=0, originator_id=originator_id, originator_version=version,
                                  topic=topic, state=MAPPER.transcoder.encode(state)))

    def _append(self, stored: Any) -> tuple[int, LoggedEvent]:
        position = len(self.events) + 1
        notification = Notification(id=position, originator_id=stored.originator_id,
                                    originator_version=stored.originator_version, topic=stored.topic,
                                    state=stored.state)
        entry = (position, DECODE.event(notification))
        self.events.append(entry)
        return entry


def workflow(number: int, organization: str, user: str, minute: int = 0, node: str = "n1") -> Workflow:
    """A one-job workflow submitted by `user` of `organization` that ran on `node`."""
    owner = {"organization": organization, "group": f"{organization}-group", "user": user}
    submitted = Workflow.submit(UUID(int=number), f"wf-{number}", parse_fuzzfile(FUZZFILE).definition, owner,
                                by=user, at=at(minute))
    submitted.stage_started("main", 1, node, at(minute + 1))
    submitted.stage_exited("main", 1, 0, at(minute + 2))
    return submitted


def allocation(number: int, workflow_number: int, node: str, minute: int = 0) -> Allocation:
    """An allocation of the workflow's main stage, placed by the scheduler on `node`."""
    placed = Allocation.request(UUID(int=10_000 + number), UUID(int=workflow_number), "main", 1,
                                Resources(), by="scheduler", at=at(minute))
    placed.mark_ready(by="scheduler", at=at(minute))
    placed.place([node], by="scheduler", at=at(minute + 1))
    return placed


def cordon(log: Log, node: str, by: str, minute: int = 0, version: int = 1) -> None:
    """A node event as the Node aggregate will write it: `by` names principal, role and source."""
    log.record_raw("domain.node:Node.HoldPlaced", node, version, {
        "originator_id": node, "originator_version": version, "timestamp": at(minute), "at": at(minute),
        "hold_id": f"h{version}", "effect": "cordon", "reason": "bios update",
        "by": {"principal": by, "role": "cluster-admin", "source": "admin"},
    })

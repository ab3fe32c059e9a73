"""Each node's event log: what happened to it (registered, ready, held, work placed, offline), newest kept.

Rows name an allocation by id only in `allocation`, so a reader who may not see that work is shown the row
without it (the route decides); every other word comes from the Node aggregate's own events.
"""

from __future__ import annotations

import threading
from collections import deque
from datetime import datetime
from typing import Any, Protocol
from uuid import UUID

import msgspec

from domain.allocation import Allocation
from projections import events
from projections.base import Projection, as_uuid, kind_of, on

KEPT = 200  # per node: the log itself keeps the rest (audit queries read it all)


class NodeEventRow(msgspec.Struct, frozen=True, kw_only=True):
    position: int
    at: datetime
    type: str
    by: str
    message: str
    allocation: str | None = None


def gib(value: int) -> str:
    return f"{value / 2**30:.1f} GiB"


def count(items: list[Any], what: str) -> str:
    return f"; {len(items)} {what}{'s' if len(items) != 1 else ''} lost" if items else ""


class Told(Protocol):
    """What a line of a node's history reads of the event it tells: the node's own, or its allocation's."""

    @property
    def originator_id(self) -> UUID: ...

    @property
    def at(self) -> datetime: ...


class NodeEventsView(Projection):
    def __init__(self, lock: threading.RLock | None = None) -> None:
        super().__init__(lock)
        self.events: dict[UUID, deque[NodeEventRow]] = {}
        self.effects: dict[str, str] = {}  # hold id -> effect, so a release names what it lifted
        self.placed: dict[UUID, list[UUID]] = {}  # running allocation -> its nodes, whose history its end joins

    def of(self, node_id: UUID | str) -> list[NodeEventRow]:
        """The node's kept events, newest first."""
        with self.lock:
            return list(reversed(self.events.get(as_uuid(node_id) or UUID(int=0), ())))

    def _add(self, event: Told, message: str, allocation: str | None = None, node: UUID | None = None,
             kind: str | None = None) -> None:
        row = NodeEventRow(position=self.applying, at=event.at, type=kind or kind_of(event).split(".")[-1],
                           by=str(getattr(event, "by", "")), message=message, allocation=allocation)
        self.events.setdefault(node or event.originator_id, deque(maxlen=KEPT)).append(row)

    @on(events.NodeRegistered)
    def _registered(self, event: events.NodeRegistered) -> None:
        c = event.capacity
        self._add(event, f"registered as {event.name}: {c.cpu} cpu, {gib(c.memory)}")

    @on(events.NodeRejoined)
    def _rejoined(self, event: events.NodeRejoined) -> None:
        self._add(event, f"its agent registered again (epoch {event.epoch}){count(event.lost, 'allocation')}")

    @on(events.NodeReady)
    def _ready(self, event: events.NodeReady) -> None:
        self._add(event, f"ready (agent epoch {event.epoch})")

    @on(events.NodeNotReady)
    def _not_ready(self, event: events.NodeNotReady) -> None:
        self._add(event, f"not ready: {event.reason}")

    @on(events.NodeWentOffline)
    def _offline(self, event: events.NodeWentOffline) -> None:
        self._add(event, f"offline: {event.reason}{count(event.lost, 'allocation')}")

    @on(events.HoldPlaced)
    def _hold_placed(self, event: events.HoldPlaced) -> None:
        effect, source = getattr(event.effect, "value", event.effect), getattr(event.source, "value", event.source)
        self.effects[event.hold_id] = str(effect)
        self._add(event, f"{effect} hold placed ({source}): {event.reason or 'no reason given'}")

    @on(events.HoldReleased)
    def _hold_released(self, event: events.HoldReleased) -> None:
        effect = self.effects.pop(event.hold_id, "a")
        source = getattr(event.releaser_source, "value", event.releaser_source)
        self._add(event, f"{effect} hold released ({source}{', forced' if event.forced else ''})")

    @on(events.AllocationPlaced)
    def _placed(self, event: events.AllocationPlaced) -> None:
        p = event.placement
        self._drop_echo(event.originator_id, str(p.id), "work placed")
        self._add(event, f"work placed: {p.cpu} cpu, {gib(p.memory)}", allocation=p.id)

    @on(events.AllocationReleased)
    def _released(self, event: events.AllocationReleased) -> None:
        self._drop_echo(event.originator_id, str(event.allocation_id), "work ended")
        self._add(event, "work ended", allocation=event.allocation_id)

    def _drop_echo(self, node: UUID, allocation: str, said: str) -> None:
        """An older log says it twice (the Allocation's event, then the Node's in the same commit): one line."""
        rows = self.events.get(node)
        if rows and rows[-1].allocation == allocation and rows[-1].message.startswith(said):
            rows.pop()

    # Since issue 43 a placement and its end are the allocation's events only: the node's history reads them there.
    @on(Allocation.Placed)
    def _allocation_placed(self, event: Allocation.Placed) -> None:
        nodes = [n for n in map(as_uuid, event.nodes) if n is not None]
        if nodes:
            self.placed[event.originator_id] = nodes
        for node in nodes:
            # the type a node's history always named it by (the Node's own event until issue 43): clients filter on it
            self._add(event, "work placed", allocation=str(event.originator_id), node=node, kind="AllocationPlaced")

    @on(Allocation.Ended)
    def _allocation_ended(self, event: Allocation.Ended) -> None:
        for node in self.placed.pop(event.originator_id, ()):
            self._add(event, f"work ended ({event.state})", allocation=str(event.originator_id), node=node,
                      kind="AllocationReleased")

    @on(events.NodeDeprovisioned)
    def _deprovisioned(self, event: events.NodeDeprovisioned) -> None:
        self._add(event, f"deprovisioned{' (forced)' if event.forced else ''}{count(event.lost, 'allocation')}")

    @on(events.NodeCredentialIssued)
    def _credential_issued(self, event: events.NodeCredentialIssued) -> None:
        self._add(event, "its agent was given its own credential")

    @on(events.NodeCredentialRevoked)
    def _credential_revoked(self, event: events.NodeCredentialRevoked) -> None:
        self._add(event, f"its agent's credential was revoked: {event.reason}")

    @on(events.NodeReadmitted)
    def _readmitted(self, event: events.NodeReadmitted) -> None:
        self._add(event, "readmitted: its agent may register again")

    @on(events.NodeRemoved)
    def _removed(self, event: events.NodeRemoved) -> None:
        self._add(event, f"removed{' (forced)' if event.forced else ''}{count(event.lost, 'allocation')}")

    @on(events.MonitoringHoldRefused)
    def _monitoring_refused(self, event: events.MonitoringHoldRefused) -> None:
        effect = getattr(event.effect, "value", event.effect)
        self._add(event, f"monitoring {effect} hold refused: {event.refusal}")

"""The nodes view: each node's status, capacity and holds, mirrored from the Node aggregate, and the allocations
running on it, read off the queue view (placements and releases are Allocation events, not Node events)."""

from __future__ import annotations

import threading
from datetime import datetime
from uuid import UUID

import msgspec

from domain.allocation import Allocation
from domain.holds import Hold
from domain.node import Node
from projections import events
from projections.base import Mirror, Projection, on
from projections.queue import QueueView


class HoldRow(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    effect: str
    source: str
    reason: str
    by: str
    at: datetime
    evict: bool = False


class NodeRow(msgspec.Struct, frozen=True, kw_only=True):
    id: UUID
    name: str
    status: str
    status_reason: str
    cpu: int
    memory: int
    devices: dict[str, int]
    annotations: dict[str, str]
    segment: str
    definition: str
    address: str
    port: int | None
    epoch: int
    joined_at: datetime
    holds: list[HoldRow]
    allocations: list[str]
    accepts_new_work: bool
    removed: bool
    allocated_cpu: int = 0  # what the allocations placed on it use, so free = capacity - allocated
    allocated_memory: int = 0
    allocated_devices: dict[str, int] = {}


def hold_row(hold: Hold) -> HoldRow:
    return HoldRow(id=hold.id, effect=hold.effect.value, source=hold.source.value, reason=hold.reason,
                   by=str(hold.by), at=hold.at, evict=hold.evict)


def allocated_devices(running: list[Allocation]) -> dict[str, int]:
    used: dict[str, int] = {}
    for allocation in running:
        for device, count in allocation.resources.devices.items():
            used[device] = used.get(device, 0) + count
    return used


class NodesView(Projection):
    """Nodes by id and name; removed nodes stay readable by id but leave the list. `queue` (shared, not this view's
    state) says what runs on each."""

    transient = ("queue",)

    def __init__(self, lock: threading.RLock | None = None, queue: QueueView | None = None) -> None:
        super().__init__(lock)
        self.queue = queue or QueueView(self.lock)
        self.mirror: Mirror[Node] = Mirror()
        self.joined: dict[UUID, datetime] = {}
        self.names: dict[str, UUID] = {}

    def node(self, node_id: UUID | str) -> Node | None:
        """The mirrored aggregate (read-only), for the scheduler snapshot."""
        return self.mirror.get(node_id)

    def nodes(self, include_removed: bool = False) -> list[Node]:
        with self.lock:
            return [n for n in self.mirror.values() if include_removed or not n.removed]

    def list(self, include_removed: bool = False) -> list[NodeRow]:
        with self.lock:
            rows = [self._row(n) for n in self.nodes(include_removed)]
        return sorted(rows, key=lambda r: r.name)

    def get(self, node_id: UUID | str) -> NodeRow | None:
        with self.lock:
            node = self.node(node_id)
            return self._row(node) if node else None

    def by_name(self, name: str) -> NodeRow | None:
        with self.lock:
            node_id = self.names.get(name)
            return self.get(node_id) if node_id else None

    def joined_at(self, node_id: UUID | str) -> datetime | None:
        """When the node's current agent (epoch) registered: work placed before it is not that agent's."""
        node = self.node(node_id)
        return self.joined.get(node.id) if node else None

    def _row(self, n: Node) -> NodeRow:
        c, running = n.capacity, [] if n.removed else self.queue.running_on(n.id)
        return NodeRow(
            id=n.id, name=n.name, status="OFFLINE" if n.removed else n.status.value, status_reason=n.status_reason,
            cpu=c.cpu, memory=c.memory, devices=dict(c.devices), annotations=dict(c.annotations), segment=c.segment,
            definition=n.definition_id, address=c.agent_address, port=c.agent_port, epoch=n.epoch,
            joined_at=self.joined[n.id], holds=[hold_row(h) for h in n.holds.values()],
            allocations=[str(a.id) for a in running], accepts_new_work=n.accepts_new_work, removed=n.removed,
            allocated_cpu=sum(a.resources.cpu_cores for a in running),
            allocated_memory=sum(a.resources.memory_bytes for a in running),
            allocated_devices=allocated_devices(running),
        )

    @on(Node.Event)
    def _replay(self, event: Node.Event) -> None:
        node = self.mirror.apply(event)
        self.names[node.name] = node.id

    @on(events.NodeRegistered, events.NodeRejoined)
    def _joined(self, event: events.NodeRegistered | events.NodeRejoined) -> None:
        self.joined[event.originator_id] = event.at

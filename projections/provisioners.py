"""The provisioners view: each Provisioner aggregate mirrored from the log, and when each node last had work.

It answers `GET /v4/provisioners`, gives the scheduler its templates (virtual nodes with the requests under way)
and the submission check its definitions, and gives the provisioner runner what its nodes look like.
"""

from __future__ import annotations

import threading
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from domain.allocation import Allocation
from domain.provisioner import PENDING, Provisioner, State, provisioner_id
from domain.provisioner_lifecycle import NodeFacts
from domain.scheduler.snapshot import Definition, NodeShape, NodeTemplate, PendingNode
from projections import events
from projections.base import Mirror, Projection, as_uuid, on
from projections.nodes import NodeRow

MADE = frozenset({State.UP, State.DRAINING, State.DELETING})


class ProvisionersView(Projection):
    def __init__(self, lock: threading.RLock | None = None) -> None:
        super().__init__(lock)
        self.mirror: Mirror[Provisioner] = Mirror()
        self.activity: dict[UUID, datetime] = {}  # node id -> when work was last placed or released, or it joined
        self.placed: dict[UUID, list[UUID]] = {}  # running allocation -> its nodes, whose activity its end renews

    def get(self, name: str) -> Provisioner | None:
        with self.lock:
            return self.mirror.get(provisioner_id(name))

    def all(self, include_deleted: bool = False) -> list[Provisioner]:
        with self.lock:
            found = [p for p in self.mirror.values() if include_deleted or not p.deleted]
        return sorted(found, key=lambda p: p.name)

    def templates(self) -> tuple[NodeTemplate, ...]:
        """The scheduler's virtual nodes: one template per live provisioner, with its requests under way."""
        return tuple(template(p) for p in self.all())

    def definitions(self) -> list[Definition]:
        """What the submission check knows a provisioner could bring up."""
        return [Definition(id=p.name, annotations=dict(p.spec.template.annotations), segment=p.spec.template.segment,
                           max_nodes=p.spec.max_nodes,
                           shape=NodeShape(cpu=p.spec.template.cpu, memory=p.spec.template.memory,
                                           devices=dict(p.spec.template.devices)))
                for p in self.all()]

    def idle_since(self, node_id: UUID) -> datetime | None:
        with self.lock:
            return self.activity.get(node_id)

    @on(Provisioner.Event)
    def _replay(self, event: Provisioner.Event) -> None:
        self.mirror.apply(event)

    @on(events.NodeRegistered, events.NodeRejoined, events.NodeReady, events.AllocationPlaced,
        events.AllocationReleased)
    def _active(self, event: events.NodeActivity) -> None:
        self.activity[event.originator_id] = event.at

    @on(Allocation.Placed)
    def _placed(self, event: Allocation.Placed) -> None:
        self.placed[event.originator_id] = [n for n in map(as_uuid, event.nodes) if n is not None]
        for node in self.placed[event.originator_id]:
            self.activity[node] = event.at

    @on(Allocation.Ended)
    def _released(self, event: Allocation.Ended) -> None:
        for node in self.placed.pop(event.originator_id, ()):
            self.activity[node] = event.at


def pool_definitions(nodes: Any, provisioners: ProvisionersView) -> list[Definition]:
    """What nodes could ever exist, for the submission check: registered nodes' pools and provisioners' templates
    (a provisioner's maxNodes is the real cap of its pool, so its template replaces what its nodes show)."""
    from projections.snapshot import node_definitions

    found = {d.id: d for d in node_definitions(nodes)}
    found.update((d.id, d) for d in provisioners.definitions())
    return list(found.values())


def template(p: Provisioner) -> NodeTemplate:
    t, expected = p.spec.template, p.expected_seconds()
    pending = tuple(PendingNode(request_id=r.id, state=r.state.value, requested_at=r.requested_at,
                                expected_at=(r.started_at or r.requested_at) + timedelta(seconds=expected),
                                attempts=r.attempts, last_error=r.last_error, retry_at=r.retry_at)
                    for r in p.live() if r.state in PENDING)
    made = sum(1 for r in p.requests.values() if r.state in MADE)
    return NodeTemplate(provisioner=p.name, cpu=t.cpu, memory=t.memory, devices=dict(t.devices),
                        annotations=dict(t.annotations), segment=t.segment, max_nodes=p.spec.max_nodes, nodes=made,
                        pending=pending, expected_seconds=expected)


def node_facts(node: NodeRow, idle_since: datetime | None) -> NodeFacts:
    """A node row (projections.nodes.NodeRow) as the lifecycle rules read it."""
    return NodeFacts(id=str(node.id), status=node.status, removed=node.removed, allocations=len(node.allocations),
                     idle_since=idle_since if not node.allocations else None)

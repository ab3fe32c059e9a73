"""What the scheduler's pass sweeps, read off the views: running work on nodes that may no longer hold it, and
emptied nodes whose deprovision hold waits (domain.app.strays decides each one again on the aggregates)."""

from __future__ import annotations

from uuid import UUID

from domain.allocation import Allocation, QueueState
from domain.node import Node
from projections.views import Views


def stray_allocations(views: Views) -> list[UUID]:
    """Running allocations one of whose nodes went OFFLINE, was removed, registered again since the placement, or
    holds an evict hold."""
    found: dict[UUID, None] = {}
    for allocation in views.queue.in_states(QueueState.RUNNING):
        for nid in allocation.nodes:
            node = views.nodes.node(nid)
            if node is None or _stray(allocation, nid, node):
                found[allocation.id] = None
                break
    return list(found)


def _stray(allocation: Allocation, nid: str, node: Node) -> bool:
    return node.stray_refusal(allocation.node_epoch(nid)) is not None


def emptied_nodes(views: Views) -> list[UUID]:
    """Nodes under a deprovision hold that no running work holds."""
    busy = {nid for allocation in views.queue.in_states(QueueState.RUNNING) for nid in allocation.nodes}
    return [n.id for n in views.nodes.nodes() if n.awaits_deprovision and str(n.id) not in busy]

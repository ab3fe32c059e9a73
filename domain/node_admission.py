"""The scheduler's frozen view of a node: what the Node aggregate (domain/node.py) admits, as the scheduler places by.

`NodeError` and `StaleAgent` are the aggregate's; they are named here too because callers have long imported them
from here."""

from __future__ import annotations

from domain.node import Node, NodeError, StaleAgent
from domain.scheduler import snapshot
from domain.scheduler.snapshot import NodeStatus

__all__ = ["NodeError", "StaleAgent", "to_node_view"]


def to_node_view(node: Node) -> snapshot.NodeView:
    """The scheduler's frozen view of a node; a removed node shows as OFFLINE so nothing lands on it."""
    c = node.capacity
    return snapshot.NodeView(
        id=str(node.id), name=node.name, definition_id=node.definition_id,
        status=NodeStatus.OFFLINE if node.removed else node.status, cpu=c.cpu, memory=c.memory,
        devices=dict(c.devices), annotations=dict(c.annotations), segment=c.segment,
        holds=tuple(h.to_view() for h in node.holds.values()),
    )

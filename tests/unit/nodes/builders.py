"""Test helpers: registered and ready nodes in a line (what runs on a node is the caller's list: `on_node`)."""

from datetime import UTC, datetime, timedelta
from uuid import UUID

from domain.holds import NodeSummary
from domain.node import Capacity, Node

T0 = datetime(2025, 1, 1, tzinfo=UTC)
GiB = 2**30


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def capacity(cpu: int = 8, memory: int = 32 * GiB, **kwargs) -> Capacity:
    return Capacity(cpu=cpu, memory=memory, **kwargs)


def registered_node(number: int = 1, **kwargs) -> Node:
    return Node.register(UUID(int=number), f"n{number}", "gpu-pool", capacity(**kwargs), by="agent", at=T0)


def ready_node(number: int = 1, **kwargs) -> Node:
    node = registered_node(number, **kwargs)
    node.mark_ready(node.epoch, by="agent", at=at(1))
    return node


def peers(total: int, held: int) -> list[NodeSummary]:
    """`total` other nodes of the definition, the first `held` of them held by monitoring."""
    return [NodeSummary(id=f"peer-{i}", monitoring_held=i < held) for i in range(total)]

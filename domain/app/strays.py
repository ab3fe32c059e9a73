"""The scheduler pass's sweep: work placed on a node that may no longer hold it is evicted, and a node whose
deprovision hold waited for its work is deprovisioned once that work ended.

A placement reads its nodes but writes none of them (node capacity is the scheduler leader's view), so a node that
went OFFLINE, was removed, registered again under a new epoch or took an evict hold just after a placement read it
would keep that work: the commands that take work off a node lose what the allocation read model showed on it, and
this sweep takes off what it did not show yet, by the same domain command (lost: retried or failed by policy).
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from domain.allocation import Allocation
from domain.app.allocations import Allocations
from domain.app.errors import NotFound
from domain.app.unit_of_work import UnitOfWork, command
from domain.node import Node


class StrayHandlers:
    def __init__(self, uow: UnitOfWork, allocations: Allocations) -> None:
        self.uow, self.allocations = uow, allocations

    @command
    def evict_stray(self, allocation: UUID, at: datetime) -> bool:
        """Evict a running allocation one of whose nodes may not hold it now (the node's own state says so); False
        when its nodes may hold it (or it ended meanwhile)."""
        try:
            alloc = self.uow.load(Allocation, allocation, "allocation")
        except NotFound:
            return False
        why = None if alloc.ended else self.stray_reason(alloc)
        if why is None:
            return False
        self.uow.save(*self.allocations.lose([str(alloc.id)], why, "scheduler", at))
        return True

    def stray_reason(self, alloc: Allocation) -> str | None:
        for nid in alloc.nodes:
            if UUID(nid) not in self.uow.repository:
                return f"node {nid} is not registered"
            why = self.uow.load(Node, UUID(nid), "node").stray_refusal(alloc.node_epoch(nid))
            if why is not None:
                return f"placed on a node that cannot hold it: {why}"
        return None

    @command
    def deprovision_emptied(self, node: UUID, at: datetime) -> bool:
        """A node under a deprovision hold whose work has all ended is deprovisioned; False: it still has work, or
        no such hold (anymore)."""
        found = self.uow.load(Node, node, "node")
        if not found.deprovision_emptied(self.allocations.on_node(node), by="scheduler", at=at):
            return False
        self.uow.save(found)
        return True

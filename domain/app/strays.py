"""The scheduler pass's sweep: work placed on a node that may no longer hold it is evicted, and a node whose
deprovision hold waited for its work is deprovisioned once that work ended.

A placement reads its nodes but writes none of them (node capacity is the scheduler leader's view), so a node that
went OFFLINE, was removed, registered again under a new epoch or took an evict hold just after a placement read it
would keep that work: the commands that take work off a node lose what the allocation read model showed on it, and
this sweep takes off what it did not show yet, by the same domain command (lost: retried or failed by policy).
One case is put back in the queue instead: work placed on a node the control plane itself was taking away (removed,
or drained by its provisioner as idle) that no agent has said a word about. The node's remover saw it empty, so the
placement raced the removal; the job never ran to anyone's knowledge, and losing it would fail a job without a
`retry on: node` policy for the control plane's own race.

The sweep also closes what a submission saved apart may leave (it saves its workflow, then its allocations:
domain.app.workflows): READY stage attempts with no allocation, when the submitter crashed or lost the log between the
two, which no placement would ever take; and a queued allocation of a stage that ended, when a stop came between the
two and did not see it, which no placement would take either (its workflow refuses the start) but the queue shows.
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from domain.allocation import Allocation
from domain.app.allocations import LIVE, Allocations
from domain.app.errors import NotFound
from domain.app.unit_of_work import UnitOfWork, command
from domain.fuzzfile.semantics import StageStatus
from domain.node import Node
from domain.workflow import Workflow


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
        why, taken_away = (None, False) if alloc.ended else self.stray_reason(alloc)
        if why is None:
            return False
        workflow = self.uow.load(Workflow, alloc.workflow_id, "workflow")
        if taken_away and self.unheard(workflow, alloc):
            self.allocations.learn_start(workflow, alloc, at)  # as a preemption: started, then taken back
            alloc.preempt(f"{why}; back in the queue: it never started there", by="scheduler", at=at)
            workflow.stage_preempted(alloc.stage, alloc.attempt, at=at, by="scheduler", requeue=True)
            self.uow.save(alloc, workflow, *self.allocations.release(alloc, "scheduler", at),
                          *self.allocations.request_ready(workflow, "scheduler", at))
            return True
        self.uow.save(*self.allocations.lose([str(alloc.id)], why, "scheduler", at))
        return True

    def stray_reason(self, alloc: Allocation) -> tuple[str | None, bool]:
        """Why the allocation may not stay where it is, and whether its node is being taken away by the control plane
        (removed or unregistered) rather than lost (OFFLINE, rejoined) or evicting (a hold); (None, False): it may."""
        for nid in alloc.nodes:
            if UUID(nid) not in self.uow.repository:
                return f"node {nid} is not registered", True
            node = self.uow.load(Node, UUID(nid), "node")
            why = node.stray_refusal(alloc.node_epoch(nid))
            if why is not None:
                return f"placed on a node that cannot hold it: {why}", node.removed
        return None, False

    def unheard(self, workflow: Workflow, alloc: Allocation) -> bool:
        """No report has made its workflow learn that this attempt started (issue 43): a job's exit, a service's
        readiness. Work swept here landed after the node's remover read the views, so a job has not run long."""
        view = workflow.stage(alloc.stage)
        return view.status is StageStatus.READY and view.attempt == alloc.attempt

    @command
    def deprovision_emptied(self, node: UUID, at: datetime) -> bool:
        """A node under a deprovision hold whose work has all ended is deprovisioned; False: it still has work, or
        no such hold (anymore)."""
        found = self.uow.load(Node, node, "node")
        if not found.deprovision_emptied(self.allocations.on_node(node), by="scheduler", at=at):
            return False
        self.uow.save(found)
        return True

    @command
    def allocate_ready(self, workflow: UUID, at: datetime) -> bool:
        """Request an allocation for each READY stage attempt of the workflow that has none (ids are deterministic, so
        one that landed meanwhile is found, not made twice); False when each had its own."""
        try:
            found = self.uow.load(Workflow, workflow, "workflow")
        except NotFound:
            return False
        missing = self.allocations.request_ready(found, "scheduler", at)
        if missing:
            self.uow.save(*missing)
        return bool(missing)

    @command
    def withdraw_orphan(self, allocation: UUID, at: datetime) -> bool:
        """Cancel a queued allocation whose workflow no longer runs its stage attempt; False when it does (or the
        allocation ended or was placed meanwhile)."""
        try:
            alloc = self.uow.load(Allocation, allocation, "allocation")
            workflow = self.uow.load(Workflow, alloc.workflow_id, "workflow")
        except NotFound:
            return False
        view = workflow.stage(alloc.stage)
        if alloc.ended or alloc.nodes or (view.attempt == alloc.attempt and view.status in LIVE):
            return False
        alloc.cancel(f"its workflow no longer runs {alloc.stage} (attempt {alloc.attempt}): {workflow.status}",
                     by="scheduler", at=at)
        self.uow.save(alloc, *self.allocations.release(alloc, "scheduler", at))
        return True

"""The autoscaler's command: move an autoscaled pool to a new size, stopping or requesting replicas with it."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from domain.app.allocations import Allocations
from domain.app.endpoints import EndpointHandlers
from domain.app.errors import Conflict
from domain.app.unit_of_work import UnitOfWork, command
from domain.workflow import Workflow, WorkflowError


class AutoscaleHandlers:
    def __init__(self, uow: UnitOfWork, allocations: Allocations, endpoints: EndpointHandlers) -> None:
        self.uow, self.allocations, self.endpoints = uow, allocations, endpoints

    @command
    def scale_service(self, workflow_id: UUID, service: str, size_seen: int, to: int, reason: str, at: datetime,
                      by: str = "autoscaler") -> bool:
        """Scale `service` from `size_seen` (what the decision was made on) to `to`. False when the pool has moved
        since (another step, or it ended): the next evaluation decides again on what is true then."""
        workflow = self.uow.load(Workflow, workflow_id, "workflow")
        pool = next((p for p in workflow.pools() if p.service == service), None)
        if pool is None or pool.size != size_seen:
            return False
        live = {alloc.stage: alloc for alloc in self.allocations.live_of(workflow)}
        try:
            stopped = workflow.scale_service(service, to, reason, at, by=by)
        except WorkflowError as error:
            raise Conflict(str(error)) from error
        touched: list[Any] = [workflow]
        for stage in stopped:
            alloc = live.get(stage)
            if alloc is not None:  # its agent stops the process once the assignment is gone
                alloc.cancel(f"scaled down: {reason}", by=by, at=at)
                touched += [alloc, *self.allocations.release(alloc, by, at)]
            # at zero the endpoint stays bound with no replica ready: the next request wakes one
            touched += (self.endpoints.replica_unready(workflow, stage, f"scaled to zero: {reason}", at) if to == 0
                        else self.endpoints.service_stopped(workflow, stage, "scaled down", at))
        self.uow.save(*touched, *self.allocations.request_ready(workflow, by, at))
        return True

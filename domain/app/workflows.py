"""Workflow commands: submit, stop, place, agent reports, node loss and preemption, saved atomically."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

import msgspec

from domain.allocation import Allocation, IllegalTransition, StaleFence
from domain.app.endpoints import with_endpoint_env
from domain.app.errors import Conflict, Forbidden, Invalid, StaleEpoch, invalid
from domain.app.ids import allocation_id
from domain.app.scheduling import SchedulingCommands
from domain.fuzzfile import parse_fuzzfile
from domain.fuzzfile.semantics import StageStatus
from domain.node import Node, NodeError, Placement
from domain.scheduler.priority import check_workflow_priority
from domain.scheduler.snapshot import Definition
from domain.tenancy import Source
from domain.tenancy.permissions import Principal
from domain.workflow import Workflow, WorkflowError

LIVE = (StageStatus.READY, StageStatus.STARTED, StageStatus.RUNNING)


class WorkflowCommands(SchedulingCommands):
    """Mixed into the Roving application: `self.repository`, `self.save`, `self.load` come from it."""

    def submit_workflow(self, workflow_id: UUID, name: str, definition: str | dict, priority: int,
                        preemptible: bool | None, principal: Principal, at: datetime,
                        definitions: list[Definition] | None = None, *, endpoint_strategy: str | None = None) -> list:
        """`definitions` (else `definitions_provider`) lets it refuse work no node could ever hold.

        Persistent endpoints of its services are claimed with `endpoint_strategy` (else the
        `roving.endpoint-strategy` annotation, else `ready`)."""
        if principal.source is not Source.ADMIN:  # agents and webhooks run work; people own it
            raise Forbidden(f"workflows are submitted with a user's token, not with the {principal.source.value} token")
        text = definition if isinstance(definition, str) else msgspec.json.encode(definition).decode()
        parsed = parse_fuzzfile(text)
        if parsed.errors:
            raise Invalid(parsed.errors)
        if (problem := check_workflow_priority(priority)) is not None:
            raise invalid("priority", problem)
        owner = owner_of(principal)
        spec = with_endpoint_env(parsed.definition, self.endpoint_base_url())
        if workflow_id in self.repository:  # the same submission again (Idempotency-Key): the first answer
            self._check_resubmission(workflow_id, spec, owner)
            return parsed.warnings
        try:
            workflow = Workflow.submit(workflow_id, name or "workflow", spec, owner, priority,
                                       preemptible, by=principal.username, at=at)
        except WorkflowError as error:
            raise invalid("definition", str(error)) from error
        self.check_feasible_submission(workflow, definitions)
        bound = self.bind_endpoints(workflow, spec, principal, at, endpoint_strategy)
        self.save(workflow, *self._allocate(workflow, principal.username, at, fresh=True), *bound)
        return parsed.warnings

    def stop_workflow(self, workflow_id: UUID, principal: Principal, at: datetime) -> None:
        workflow = self.load(Workflow, workflow_id, "workflow")
        live = self._live_allocations(workflow)
        try:
            workflow.cancel(by=principal.username, at=at, reason=f"stopped by {principal.username}")
        except WorkflowError as error:
            raise Conflict(str(error)) from error
        touched = [workflow]
        for allocation in live:
            allocation.cancel("workflow stopped", by=principal.username, at=at)
            touched += [allocation, *self._release(allocation, principal.username, at)]
            if workflow.stage(allocation.stage).kind == "service":  # its endpoint stops serving it: 503, not 502
                touched += self.endpoints_stopped(workflow, allocation.stage, f"stopped by {principal.username}", at)
        self.save(*touched)

    def place(self, allocation: UUID, node_ids: list[UUID], by: str, at: datetime) -> int:
        alloc = self.load(Allocation, allocation, "allocation")
        workflow = self.load(Workflow, alloc.workflow_id, "workflow")
        nodes = [self.load(Node, n, "node") for n in node_ids]
        res = alloc.resources
        try:
            epoch = alloc.place([str(n) for n in node_ids], by=by, at=at)
            for node in nodes:
                node.place_allocation(Placement(id=str(alloc.id), cpu=int(res.get("cpu_cores", 1)),
                                                memory=int(res.get("memory_bytes", 0)),
                                                devices=dict(res.get("devices", {}))), by=by, at=at)
            workflow.stage_started(alloc.stage, alloc.attempt, nodes[0].name, at=at, by=by)
        except (IllegalTransition, NodeError, WorkflowError) as error:
            raise Conflict(f"cannot place {alloc.stage}: {error}") from error
        self.save(alloc, *nodes, workflow)
        return epoch

    def report(self, node: UUID, allocation: UUID, epoch: int, event: str, exit_code: int | None,
               reason: str, at: datetime) -> None:
        """An agent's report, idempotent: the same report again is a no-op; one from a placement the control
        plane has moved past (another epoch or node, or an allocation that ended otherwise) is StaleEpoch."""
        alloc = self.load(Allocation, allocation, "allocation")
        if str(node) not in alloc.nodes or alloc.epoch != epoch:
            raise StaleEpoch(f"allocation {allocation} is not running at epoch {epoch} on this node")
        code = exit_code if exit_code is not None else 255
        if event == "exited" and alloc.ended and alloc.exit_code == code:
            return  # recorded already: a retried report
        if alloc.ended:
            raise StaleEpoch(f"allocation {alloc.stage} attempt {alloc.attempt} already ended {alloc.state.value}")
        if event == "exited":
            self._exited(alloc, code, at)
        elif event == "ready":
            self._ready(alloc, at)

    def _ready(self, alloc: Allocation, at: datetime) -> None:
        workflow = self.load(Workflow, alloc.workflow_id, "workflow")
        stage = workflow.stage(alloc.stage)
        if stage.status is StageStatus.RUNNING and stage.attempt == alloc.attempt:
            return  # readiness reported again
        try:
            workflow.stage_running(alloc.stage, alloc.attempt, at=at, by="agent")
        except WorkflowError as error:
            raise StaleEpoch(str(error)) from error
        bound = self.endpoints_ready(workflow, alloc.stage, at)
        self.save(workflow, *self._allocate(workflow, "agent", at), *bound)

    def _exited(self, alloc: Allocation, exit_code: int, at: datetime) -> None:
        workflow = self.load(Workflow, alloc.workflow_id, "workflow")
        try:
            alloc.exited(exit_code, alloc.epoch, by="agent", at=at)
        except (StaleFence, IllegalTransition) as error:
            raise StaleEpoch(str(error)) from error
        try:
            workflow.stage_exited(alloc.stage, alloc.attempt, exit_code, at=at, by="agent")
        except WorkflowError:  # the workflow moved on; the allocation still ended and gives its resources back
            self.save(alloc, *self._release(alloc, "agent", at))
            return
        touched = [alloc, workflow, *self._release(alloc, "agent", at)]
        touched += self._stop_idle_services(workflow, at)
        touched += self.endpoints_stopped(workflow, alloc.stage, f"service exited with code {exit_code}", at)
        self.save(*touched, *self._allocate(workflow, "agent", at))

    def lose_allocations(self, lost: list[str], reason: str, by: str, at: datetime) -> list:
        """Allocations whose node went away: evicted, their resources released, their stages retried or failed
        by policy. Each workflow decides its next attempts once, after all of its losses."""
        touched: list = []
        workflows: dict[UUID, Workflow] = {}
        for aid in lost:
            alloc = self.load(Allocation, UUID(aid), "allocation")
            if alloc.ended:
                continue
            workflow = workflows.setdefault(alloc.workflow_id, self.load(Workflow, alloc.workflow_id, "workflow"))
            alloc.evict(reason, by=by, at=at)
            if workflow.stage(alloc.stage).status in (StageStatus.STARTED, StageStatus.RUNNING):
                workflow.stage_lost_node(alloc.stage, alloc.attempt, at=at,
                                         max_eviction_restarts=self.max_eviction_restarts(), by=by)
            touched += [alloc, *self._release(alloc, by, at)]
        for workflow in workflows.values():
            touched += [workflow, *self._allocate(workflow, by, at)]
        return touched

    def preempt(self, victim: UUID, text: str, by: str, at: datetime) -> None:
        alloc = self.load(Allocation, victim, "allocation")
        workflow = self.load(Workflow, alloc.workflow_id, "workflow")
        alloc.preempt(text, by=by, at=at)
        workflow.stage_preempted(alloc.stage, alloc.attempt, at=at, by=by, requeue=True)
        self.save(alloc, workflow, *self._release(alloc, by, at), *self._allocate(workflow, by, at))

    def _allocate(self, workflow: Workflow, by: str, at: datetime, fresh: bool = False) -> list[Allocation]:
        """An allocation for every ready stage attempt that has none yet (ids are deterministic).

        A workflow being submitted (`fresh`) has no allocations yet, so nothing is looked up."""
        priorities = self.owner_priorities(workflow.owner)
        created = []
        for ready in workflow.ready_stages():
            aid = allocation_id(workflow.id, ready.stage.name, ready.attempt)
            if not fresh and aid in self.repository:
                continue
            alloc = Allocation.request(
                aid, workflow.id, ready.stage.name, ready.attempt, msgspec.to_builtins(ready.stage.resources),
                workflow_priority=workflow.priority, preemptible=ready.preemptible,
                execute_timeout_seconds=ready.stage.execute_timeout_seconds, by=by, at=at, **priorities)
            alloc.mark_ready(by=by, at=at)
            created.append(alloc)
        return created

    def _live_allocations(self, workflow: Workflow) -> list[Allocation]:
        found = []
        for view in workflow.stage_views():
            if view.status in LIVE:
                aid = allocation_id(workflow.id, view.name, view.attempt)
                if aid in self.repository:
                    alloc = self.repository.get(aid)
                    if not alloc.ended:
                        found.append(alloc)
        return found

    def _release(self, alloc: Allocation, by: str, at: datetime) -> list[Node]:
        nodes = []
        for nid in alloc.nodes:
            node = self.repository.get(UUID(nid))
            if node.release_allocation(str(alloc.id), by=by, at=at):
                nodes.append(node)
        return nodes

    def _stop_idle_services(self, workflow: Workflow, at: datetime) -> list[Any]:
        touched: list[Any] = []
        for stage in workflow.services_to_stop():
            view = workflow.stage(stage)
            aid = allocation_id(workflow.id, stage, view.attempt)
            if aid in self.repository:
                alloc = self.repository.get(aid)
                if not alloc.ended:
                    alloc.cancel("no remaining dependents", by="scheduler", at=at)
                    touched += [alloc, *self._release(alloc, "scheduler", at)]
            workflow.stage_stopped(stage, view.attempt, at=at, by="scheduler")
        return touched


    def _check_resubmission(self, workflow_id: UUID, spec: Any, owner: dict[str, str]) -> None:
        """A repeated submission must be the same caller's and the same definition; anything else is a conflict."""
        first = self.load(Workflow, workflow_id, "workflow")
        if first.owner.get("user_id") != owner["user_id"] or msgspec.to_builtins(first.definition) != msgspec.to_builtins(spec):
            raise Conflict("this Idempotency-Key was already used for a different submission; use a new key")


def owner_of(principal: Principal) -> dict[str, str]:
    groups = sorted(str(g) for g in principal.group_ids)
    return {"organization_id": str(principal.organization_id or ""), "group_id": groups[0] if groups else "",
            "user_id": str(principal.user_id or ""), "username": principal.username}


"""The agents' reports on the attempts they run (progress, image pulls, readiness, exits), each recorded once and
saved atomically with what it sets off: a stage ending frees its nodes, readies its dependents, stops its endpoint."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Protocol
from uuid import UUID

from domain.allocation import Allocation, IllegalTransition, StaleFence
from domain.app.allocations import Allocations
from domain.app.endpoints import EndpointHandlers
from domain.app.errors import AppError, Conflict, Invalid, NotFound, StaleEpoch
from domain.app.unit_of_work import Recheck, UnitOfWork, command
from domain.fuzzfile.semantics import StageStatus
from domain.node import Node
from domain.workflow import Workflow, WorkflowError


class AgentReport(Protocol):
    """What `report_all` reads of each report (the agent protocol's body)."""

    allocation_id: UUID
    epoch: int
    event: str
    exit_code: int | None
    reason: str
    listening: Sequence[int] | None


class AgentReports:
    """The report handlers of WorkflowHandlers (which owns the unit of work, allocations and endpoints they use)."""

    uow: UnitOfWork
    allocations: Allocations
    endpoints: EndpointHandlers

    @command
    def report(self, node: UUID, allocation: UUID, epoch: int, event: str, exit_code: int | None,
               reason: str, at: datetime, listening: tuple[int, ...] | None = None) -> None:
        """An agent's report, idempotent: the same report again is a no-op; one from a placement the control
        plane has moved past (another epoch or node, or an allocation that ended otherwise) is StaleEpoch.
        A service's `ready` carries `listening`, the TCP ports its own processes listen on (None: not said)."""
        alloc = self.uow.load(Allocation, allocation, "allocation")
        if str(node) not in alloc.nodes or alloc.epoch != epoch:
            raise StaleEpoch(f"allocation {allocation} is not running at epoch {epoch} on this node")
        code = exit_code if exit_code is not None else 255
        if event == "progress":
            self._progress(alloc, reason, at)
            return
        if event == "image":
            self._image(alloc, reason, at)
            return
        if event == "note":  # what the node could not do as asked (a memlock limit), told on the stage
            self._tell(alloc, Workflow.stage_noted, reason, at)
            return
        if event == "exited" and alloc.multinode:
            return self._rank_exited(alloc, str(node), code, at)
        if event == "exited" and alloc.ended and alloc.exit_code == code:
            return  # recorded already: a retried report
        if alloc.ended:
            raise StaleEpoch(f"allocation {alloc.stage} attempt {alloc.attempt} already ended {alloc.state.value}")
        if event == "exited":
            self._exited(alloc, code, at, reason)
        elif event == "ready":
            self._ready(alloc, at, listening)
        elif event == "unready":
            self._unready(alloc, reason or "readiness probe failed", at)

    @command
    def report_all(self, node: UUID, reports: Sequence[AgentReport], at: datetime) -> list[AppError | None]:
        """Many reports of one node in one commit, in order: each one's refusal (StaleEpoch, NotFound, Invalid) or
        None when recorded. Each report refuses before it changes anything, so a refused one never rides along."""
        outcomes: list[AppError | None] = []
        with self.uow.deferring():
            for r in reports:
                try:
                    listening = tuple(r.listening) if r.listening is not None else None
                    self.report(node, r.allocation_id, r.epoch, r.event, r.exit_code, r.reason, at, listening)
                except (StaleEpoch, NotFound, Invalid, Conflict) as refused:
                    if self.uow.repository.doubt():  # a refusal stands on the log, never on memory alone
                        raise Recheck(f"report refused on copies from memory ({refused}); deciding again") from refused
                    outcomes.append(refused)
                else:
                    outcomes.append(None)
        return outcomes

    def _progress(self, alloc: Allocation, text: str, at: datetime) -> None:
        """How far an ingress or egress has come, as an event of its workflow (the agent sends one every few s)."""
        self._tell(alloc, Workflow.transfer_progressed, text, at)

    def _image(self, alloc: Allocation, text: str, at: datetime) -> None:
        """How far the pull of a stage's image has come, or how it got ready, as an event of its workflow."""
        self._tell(alloc, Workflow.image_progressed, text, at)

    def _tell(self, alloc: Allocation, record: Callable[..., None], text: str, at: datetime) -> None:
        """A line the agent tells about a live attempt, recorded on its workflow; an ended one is stale."""
        if alloc.ended:
            raise StaleEpoch(f"allocation {alloc.stage} attempt {alloc.attempt} already ended {alloc.state.value}")
        workflow = self.uow.load(Workflow, alloc.workflow_id, "workflow")
        try:  # told before the workflow learned of the start: one message still (Workflow.TOLD)
            record(workflow, alloc.stage, alloc.attempt, text, at=at)
        except WorkflowError as error:
            raise StaleEpoch(str(error)) from error
        self.uow.save(workflow)

    def _ready(self, alloc: Allocation, at: datetime, listening: tuple[int, ...] | None = None) -> None:
        workflow = self.uow.load(Workflow, alloc.workflow_id, "workflow")
        try:
            self.allocations.learn_start(workflow, alloc, at)
        except WorkflowError as error:
            raise StaleEpoch(str(error)) from error
        stage = workflow.stage(alloc.stage)
        if stage.status is StageStatus.RUNNING and stage.attempt == alloc.attempt:
            self._ready_again(workflow, alloc, at, listening)  # or readiness (and its ports) reported again
            return
        try:
            workflow.stage_running(alloc.stage, alloc.attempt, at=at, by="agent")
        except WorkflowError as error:
            raise StaleEpoch(str(error)) from error
        bound = self.endpoints.service_ready(workflow, alloc.stage, at, self._node_host(alloc), listening)
        self.uow.save(workflow, *self.allocations.request_ready(workflow, "agent", at), *bound)

    def _node_host(self, alloc: Allocation) -> str:
        """Where the proxy reaches the allocation's service: the address its node's agent registered."""
        if not alloc.nodes:
            return ""
        try:
            return self.uow.load(Node, UUID(alloc.nodes[0]), "node").capacity.agent_address
        except NotFound:  # the node was removed meanwhile: no target (the endpoint is not bound)
            return ""

    def _rank_exited(self, alloc: Allocation, node: str, exit_code: int, at: datetime) -> None:
        """One rank of a multinode allocation: recorded once; the stage ends when the last rank has exited."""
        if node in alloc.rank_exits:
            return  # recorded already: a retried report
        if alloc.ended:
            raise StaleEpoch(f"allocation {alloc.stage} attempt {alloc.attempt} already ended {alloc.state.value}")
        try:
            ended = alloc.rank_exited(node, exit_code, alloc.epoch, by="agent", at=at)
        except (StaleFence, IllegalTransition) as error:
            raise StaleEpoch(str(error)) from error
        if not ended:
            self.uow.save(alloc)
            return
        self._stage_ended(alloc, alloc.exit_code or 0, at, alloc.reason if alloc.exit_code else "")

    def _ready_again(self, workflow: Workflow, alloc: Allocation, at: datetime,
                     listening: tuple[int, ...] | None = None) -> None:
        """An unready service passes its probe again: back into its endpoint. A ready one saying anew which ports
        it listens on (it opened or closed one) updates its endpoints; the same news again changes nothing."""
        again = workflow.service_ready_again(alloc.stage, alloc.attempt, at=at)
        if not again and listening is None:
            return
        bound = self.endpoints.service_ready(workflow, alloc.stage, at, self._node_host(alloc), listening)
        if again or bound:
            self.uow.save(workflow, *bound)

    def _unready(self, alloc: Allocation, reason: str, at: datetime) -> None:
        """A ready service's probe fails: out of its endpoint (another replica serves, or the proxy answers 503),
        still running."""
        workflow = self.uow.load(Workflow, alloc.workflow_id, "workflow")
        try:
            changed = workflow.service_unready(alloc.stage, alloc.attempt, reason, at=at)
        except WorkflowError as error:
            raise StaleEpoch(str(error)) from error
        if changed:
            self.uow.save(workflow, *self.endpoints.replica_unready(workflow, alloc.stage, reason, at))

    def _exited(self, alloc: Allocation, exit_code: int, at: datetime, reason: str = "") -> None:
        try:
            alloc.exited(exit_code, alloc.epoch, by="agent", at=at)
        except (StaleFence, IllegalTransition) as error:
            raise StaleEpoch(str(error)) from error
        self._stage_ended(alloc, exit_code, at, reason)

    def _stage_ended(self, alloc: Allocation, exit_code: int, at: datetime, reason: str) -> None:
        """The allocation ended: its stage exits, its nodes get their capacity back, dependents may start."""
        workflow = self.uow.load(Workflow, alloc.workflow_id, "workflow")
        try:
            self.allocations.learn_start(workflow, alloc, at)
            workflow.stage_exited(alloc.stage, alloc.attempt, exit_code, at=at, by="agent", told=reason)
        except WorkflowError as error:  # the workflow moved on; the allocation still ended and gives its resources back
            if self.uow.repository.doubt():  # ...as the log says, not as a copy in memory says
                raise Recheck(f"{alloc.stage}: {error} (on copies from memory); deciding again") from error
            self.uow.save(alloc, *self.allocations.release(alloc, "agent", at))
            return
        touched = [alloc, workflow, *self.allocations.release(alloc, "agent", at)]
        touched += self.allocations.stop_idle_services(workflow, at)
        why = f"service exited with code {exit_code}" + (f" ({reason})" if reason else "")
        touched += self.endpoints.service_stopped(workflow, alloc.stage, why, at)
        self.uow.save(*touched, *self.allocations.request_ready(workflow, "agent", at))

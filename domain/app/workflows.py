"""Workflow handlers: submit, stop, and the agent's reports of readiness and exits, each saved atomically."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol
from uuid import UUID

import msgspec

from domain.allocation import Allocation, IllegalTransition, StaleFence
from domain.app import access
from domain.app.allocations import Allocations
from domain.app.endpoints import EndpointHandlers, with_endpoint_env
from domain.app.errors import AppError, Conflict, Forbidden, Invalid, NotFound, StaleEpoch, invalid
from domain.app.profiles import ProfileHandlers
from domain.app.projects import ProjectHandlers
from domain.app.scheduling import SchedulingHandlers
from domain.app.secret_reading import check_references
from domain.app.unit_of_work import Recheck, UnitOfWork, command
from domain.app.volumes import VolumeHandlers
from domain.fuzzfile import Problem, parse_fuzzfile
from domain.fuzzfile.parse import ParseResult
from domain.fuzzfile.schema import Workflow as Fuzzfile
from domain.fuzzfile.semantics import StageStatus
from domain.fuzzfile.stages import list_steps
from domain.node import Node
from domain.project_paths import ProjectError, check_path
from domain.scheduler.priority import check_workflow_priority
from domain.scheduler.snapshot import Definition
from domain.tenancy.permissions import Principal
from domain.workflow import Workflow, WorkflowError

DRAFT, DRAFT_AT = UUID(int=0), datetime.fromtimestamp(0, UTC)  # the workflow `validate` builds to check, unsaved


class AgentReport(Protocol):
    """What `report_all` reads of each report (the agent protocol's body)."""

    allocation_id: UUID
    epoch: int
    event: str
    exit_code: int | None
    reason: str
    listening: Sequence[int] | None


class WorkflowHandlers:
    def __init__(self, uow: UnitOfWork, allocations: Allocations, endpoints: EndpointHandlers,
                 scheduling: SchedulingHandlers, profiles: ProfileHandlers | None = None) -> None:
        self.uow, self.allocations, self.endpoints, self.scheduling = uow, allocations, endpoints, scheduling
        self.profiles = profiles or ProfileHandlers(uow)
        self.volumes = VolumeHandlers(uow, scheduling.config, scheduling.read_models)
        self.projects = ProjectHandlers(uow, scheduling.config, scheduling.read_models)

    @command
    def submit_workflow(self, workflow_id: UUID, name: str, definition: str | dict, priority: int,
                        preemptible: bool | None, principal: Principal, at: datetime,
                        definitions: list[Definition] | None = None, *, endpoint_strategy: str | None = None,
                        project: str | None = None, annotations: dict[str, str] | None = None) -> list:
        """`definitions` (else the read models' node definitions) lets it refuse work no node could ever hold.

        Persistent endpoints of its services are claimed with `endpoint_strategy` (else the
        `roving.endpoint-strategy` annotation, else `ready`). `project` (`--project`) stands for the definition's
        own `project:`; `annotations` (the client's metadata, e.g. the preset it expanded) join its annotations."""
        access.submitter(principal)
        parsed = with_options(parse_fuzzfile(definition if isinstance(definition, str)
                                             else msgspec.json.encode(definition).decode()), project, annotations)
        if parsed.definition is None:  # None exactly when there are errors
            raise Invalid(parsed.errors)
        if (problem := check_workflow_priority(priority)) is not None:
            raise invalid("priority", problem)
        if parsed.definition.images and not self.scheduling.config.scheduler_config().image_builds:
            raise invalid("images", "image builds are turned off on this cluster (images.builds: false); "
                                    "use a registry image instead")
        check_references(self.uow, parsed.definition, principal)
        owner = owner_of(principal)
        if found := self.projects.resolve(parsed.definition, owner, principal):
            owner["project"] = found
        spec = with_endpoint_env(self.profiles.bind(parsed.definition), self.endpoints.base_url)
        warnings = parsed.warnings + self.cluster_warnings(parsed.definition)
        repository = self.uow.repository
        # the same submission again (Idempotency-Key) gets the first answer; a fresh id is not looked up
        if not repository.presumed_new(workflow_id) and workflow_id in repository:
            self._check_resubmission(workflow_id, spec, owner)
            return warnings
        try:
            workflow = Workflow.submit(workflow_id, name or "workflow", spec, owner, priority,
                                       preemptible, by=principal.username, at=at)
        except WorkflowError as error:
            raise invalid("definition", str(error)) from error
        self.scheduling.check_feasible_submission(workflow, definitions)
        self.projects.check_fits(workflow, definitions)
        self.volumes.bind(workflow, principal, at)
        bound = self.endpoints.bind(workflow, spec, principal, at, endpoint_strategy)
        self.uow.save(workflow, *self.allocations.request_ready(workflow, principal.username, at, fresh=True), *bound)
        return warnings

    def validate_workflow(self, definition: str | dict, principal: Principal) -> dict[str, list[Problem]]:
        """`roving workflow validate` against this cluster: the parser's errors and warnings, what submission would
        refuse for this caller (volumes, segments) and what this cluster would not do as written."""
        access.submitter(principal)
        text = definition if isinstance(definition, str) else msgspec.json.encode(definition).decode()
        parsed = parse_fuzzfile(text)
        if parsed.definition is None:  # None exactly when there are errors
            return {"errors": parsed.errors, "warnings": parsed.warnings}
        owner = owner_of(principal)
        _, refused = self.volumes.resolve(parsed.definition, owner, principal)
        try:
            project = self.projects.resolve(parsed.definition, owner, principal)
        except (Invalid, Forbidden) as error:
            refused.append(Problem(path="project", message=str(error).removeprefix("project: ")))
            project = ""
        refused += self.projects.problems(list_steps_specs(parsed.definition), project, None)
        return {"errors": refused + self._never_fits(parsed.definition, principal),
                "warnings": parsed.warnings + self.cluster_warnings(parsed.definition)}

    def _never_fits(self, definition: Fuzzfile, principal: Principal) -> list[Problem]:
        """What submission would refuse as no node of this cluster could ever hold it (the same check)."""
        try:
            draft = Workflow.submit(DRAFT, "validate", self.profiles.bind(definition), owner_of(principal), 0, None,
                                    by=principal.username, at=DRAFT_AT)  # never saved: its id and time are moot
            self.scheduling.check_feasible_submission(draft, None)
        except (Invalid, WorkflowError, Conflict) as refused:
            return list(getattr(refused, "problems", [])) or [Problem(path="definition", message=str(refused))]
        return []

    def cluster_warnings(self, definition: Fuzzfile) -> list[Problem]:
        """What this cluster will not do as the definition says (each naming its field), beyond what the parser
        knows: answered by validate and by submission, which still accepts it."""
        return self.volumes.warnings(definition)

    @command
    def stop_workflow(self, workflow_id: UUID, principal: Principal, at: datetime) -> None:
        workflow = self.uow.load(Workflow, workflow_id, "workflow")
        access.stop_work(principal, workflow.owner)
        live = self.allocations.live_of(workflow)
        try:
            workflow.cancel(by=principal.username, at=at, reason=f"stopped by {principal.username}")
        except WorkflowError as error:
            raise Conflict(str(error)) from error
        touched: list[Any] = [workflow]
        for allocation in live:
            allocation.cancel("workflow stopped", by=principal.username, at=at)
            touched += [allocation, *self.allocations.release(allocation, principal.username, at)]
            if workflow.stage(allocation.stage).kind == "service":  # its endpoint stops serving it: 503, not 502
                touched += self.endpoints.service_stopped(workflow, allocation.stage,
                                                          f"stopped by {principal.username}", at)
        self.uow.save(*touched)

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
        try:
            record(workflow, alloc.stage, alloc.attempt, text, at=at)
        except WorkflowError as error:
            raise StaleEpoch(str(error)) from error
        self.uow.save(workflow)

    def _ready(self, alloc: Allocation, at: datetime, listening: tuple[int, ...] | None = None) -> None:
        workflow = self.uow.load(Workflow, alloc.workflow_id, "workflow")
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
            return self.uow.save(alloc)
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

    def _check_resubmission(self, workflow_id: UUID, spec: Any, owner: dict[str, str]) -> None:
        """A repeated submission must be the same caller's and the same definition; anything else is a conflict."""
        first = self.uow.load(Workflow, workflow_id, "workflow")
        if first.owner.get("user_id") != owner["user_id"] or msgspec.to_builtins(first.definition) != msgspec.to_builtins(spec):
            raise Conflict("this Idempotency-Key was already used for a different submission; use a new key")


def with_options(parsed: ParseResult, project: str | None, annotations: dict[str, str] | None) -> ParseResult:
    """The submission's own options over its definition: `--project`, and annotations (checked like the Fuzzfile's)."""
    if parsed.definition is None or (project is None and not annotations):
        return parsed
    problems = [Problem(path=f"annotations.{k}", message="annotation names and values are text of at most 256 "
                                                         "and 4096 characters") for k, v in (annotations or {}).items()
                if not (isinstance(k, str) and isinstance(v, str) and 0 < len(k) <= 256 and len(v) <= 4096)]
    if project is not None:
        try:
            project = check_path(project)
        except ProjectError as error:
            problems.append(Problem(path="project", message=error.reason))
    if problems:
        return ParseResult(None, problems, parsed.warnings)
    merged = {**(parsed.definition.annotations or {}), **(annotations or {})} or None
    definition = msgspec.structs.replace(parsed.definition, annotations=merged,
                                         project=project if project is not None else parsed.definition.project)
    return ParseResult(definition, [], parsed.warnings)


def list_steps_specs(definition: Fuzzfile) -> list[Any]:
    """One spec per job, service and task array of a parsed definition (what `Workflow.step_specs` gives)."""
    return [step.template for step in list_steps(definition)]


def owner_of(principal: Principal) -> dict[str, str]:
    groups = sorted(str(g) for g in principal.group_ids)
    return {"organization_id": str(principal.organization_id or ""), "group_id": groups[0] if groups else "",
            "user_id": str(principal.user_id or ""), "username": principal.username}

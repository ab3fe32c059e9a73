"""Workflow handlers: submit, validate and stop (the agents' reports: domain.app.reports).

Stop is saved atomically. A submission that claims nothing beside its workflow and its allocations (no endpoint, no
volume) is saved as one message per aggregate, the workflow first (issue 43: an atomic batch costs the log's server
12-19 times the same messages published plainly). Until its allocations land its READY stages have none; the
same submission again (an Idempotency-Key, or the command's own retry after a lost race) requests them, and so does
the scheduler leader's sweep (domain.app.strays, api.scheduler.unallocated) for one whose submitter went away.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import msgspec

from domain.app import access
from domain.app.allocations import Allocations
from domain.app.endpoints import EndpointHandlers, with_endpoint_env
from domain.app.errors import Conflict, Forbidden, Invalid, invalid
from domain.app.profiles import ProfileHandlers
from domain.app.projects import ProjectHandlers
from domain.app.reports import AgentReports
from domain.app.scheduling import SchedulingHandlers
from domain.app.secret_reading import check_references
from domain.app.unit_of_work import UnitOfWork, command
from domain.app.volumes import VolumeHandlers
from domain.fuzzfile import Problem, parse_fuzzfile
from domain.fuzzfile.default_timeouts import no_backfill_warnings, with_default_timeouts
from domain.fuzzfile.parse import ParseResult
from domain.fuzzfile.schema import Workflow as Fuzzfile
from domain.fuzzfile.stages import list_steps
from domain.project_paths import ProjectError, check_path
from domain.scheduler.memory_default import with_default_memory
from domain.scheduler.priority import check_workflow_priority
from domain.scheduler.snapshot import Definition
from domain.tenancy.permissions import Principal
from domain.workflow import Workflow, WorkflowError

DRAFT, DRAFT_AT = UUID(int=0), datetime.fromtimestamp(0, UTC)  # the workflow `validate` builds to check, unsaved
APART_MOST = 16  # allocations a submission publishes apart after its workflow (pipelined); more: one atomic commit


class WorkflowHandlers(AgentReports):
    """Submission, validation and stopping; and (AgentReports) what the agents report of the attempts they run."""

    def __init__(self, uow: UnitOfWork, allocations: Allocations, endpoints: EndpointHandlers,
                 scheduling: SchedulingHandlers, profiles: ProfileHandlers | None = None) -> None:
        self.uow, self.allocations, self.endpoints, self.scheduling = uow, allocations, endpoints, scheduling
        self.profiles = profiles or ProfileHandlers(uow)
        self.volumes = VolumeHandlers(uow, scheduling.config, scheduling.read_models)
        self.projects = ProjectHandlers(uow, scheduling.config, scheduling.read_models)

    @command
    def submit_workflow(self, workflow_id: UUID, name: str, definition: str | dict[str, Any], priority: int,
                        preemptible: bool | None, principal: Principal, at: datetime,
                        definitions: list[Definition] | None = None, *, endpoint_strategy: str | None = None,
                        project: str | None = None, annotations: dict[str, str] | None = None) -> list[Any]:
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
        spec, defaulted = with_default_memory(
            self.with_cluster_defaults(with_endpoint_env(self.profiles.bind(parsed.definition), self.endpoints.base_url)),
            self.scheduling.config.scheduler_config().default_memory_per_core)
        warnings = parsed.warnings + self.cluster_warnings(parsed.definition) + defaulted
        repository = self.uow.repository
        # the same submission again (Idempotency-Key) gets the first answer; a fresh id is not looked up
        if not repository.presumed_new(workflow_id) and workflow_id in repository:
            first = self._check_resubmission(workflow_id, spec, owner)
            if missing := self.allocations.request_ready(first, principal.username, at):  # the first one's never landed
                self.uow.save(*missing)
            return warnings
        try:
            workflow = Workflow.submit(workflow_id, name or "workflow", spec, owner, priority,
                                       preemptible, by=principal.username, at=at)
        except WorkflowError as error:
            raise invalid("definition", str(error)) from error
        self.scheduling.check_feasible_submission(workflow, definitions)
        self.projects.check_fits(workflow, definitions)
        asked = self.volumes.bind(workflow, principal, at)
        bound = self.endpoints.bind(workflow, spec, principal, at, endpoint_strategy)
        allocations = self.allocations.request_ready(workflow, principal.username, at, fresh=True)
        if bound or asked or len(allocations) > APART_MOST:
            self.uow.save(workflow, *allocations, *bound, *asked)
            return warnings
        self.uow.save(workflow)  # one message when its first advance only readied stages (Workflow.Submitted)
        self.uow.save_apart(*allocations)  # each one message, expected new: no batch
        return warnings

    def validate_workflow(self, definition: str | dict[str, Any], principal: Principal) -> dict[str, list[Problem]]:
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
        defaulted, notes = with_default_memory(parsed.definition,
                                               self.scheduling.config.scheduler_config().default_memory_per_core)
        return {"errors": refused + self._never_fits(defaulted, principal),
                "warnings": parsed.warnings + self.cluster_warnings(parsed.definition) + notes}

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
        backfill = self.scheduling.config.scheduler_config().backfill_enabled
        unbounded = no_backfill_warnings(self.with_cluster_defaults(definition)) if backfill else []
        return self.volumes.warnings(definition) + unbounded

    def with_cluster_defaults(self, definition: Fuzzfile) -> Fuzzfile:
        """The cluster's default execute timeouts given to the jobs that set none."""
        config = self.scheduling.config.scheduler_config()
        return with_default_timeouts(definition, config.default_execute_timeout_seconds,
                                     config.profile_execute_timeouts)

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

    def _check_resubmission(self, workflow_id: UUID, spec: Any, owner: dict[str, str]) -> Workflow:
        """A repeated submission must be the same caller's and the same definition; anything else is a conflict."""
        first = self.uow.load(Workflow, workflow_id, "workflow")
        if first.owner.get("user_id") != owner["user_id"] or msgspec.to_builtins(first.definition) != msgspec.to_builtins(spec):
            raise Conflict("this Idempotency-Key was already used for a different submission; use a new key")
        return first


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

"""Answers about work: workflows (submitted, validated, stopped, listed, described), their activity, `why` their
stages wait, and the scheduler's queue and its figures; and how a listed workflow's answer is built from its view
row (`workflow_summary`, the one place: tests/unit/api/test_answer_rows.py keeps the two field lists together)."""

import enum
from typing import Any

from api.http.answers.base import Answer, Problem, Timestamp
from domain.fuzzfile.semantics import StageStatus  # the stage states as the domain names them, one list
from projections.activity import ActivityRow
from projections.projects import SharedRow
from projections.queue_rows import QueueRow
from projections.workflows import StageRow, WorkflowRow
from projections.workflows import WorkflowDetail as DetailRow


class WorkflowStatus(str, enum.Enum):
    """As domain.workflow.Workflow.status derives it: a named enum in the document, so a generated client compares
    against names, not free strings."""

    PENDING = "PENDING"
    STARTED = "STARTED"
    FINISHED = "FINISHED"
    FAILED = "FAILED"
    CANCELED = "CANCELED"


class WorkflowCreated(Answer):
    id: str
    warnings: list[Problem]


class Validation(Answer):
    valid: bool
    errors: list[Problem]
    warnings: list[Problem]


class Stopped(Answer):
    id: str
    stopped: bool


class Owner(Answer):
    """As the workflows view holds it (projections.workflows.Owner), every field sent: "" where none."""

    organization_id: str
    group_id: str
    user_id: str
    project: str  # the project path its work counts toward ("" before projects existed)


class WorkflowSummary(Answer):
    id: str
    name: str
    status: WorkflowStatus
    owner: Owner
    priority: int
    effective_inputs: int
    preemptible: bool | None
    submitted_by: str
    submitted_at: Timestamp
    updated_at: Timestamp
    stage_count: int
    stages_ended: int
    annotations: dict[str, str]  # the workflow's own (a preset start records its name and digest here)
    user: str | None
    group: str | None
    organization: str | None


def workflow_summary(row: WorkflowRow, names: dict[str, str | None]) -> WorkflowSummary:
    """The row with its owner's names (`user`, `group`, `organization`, as routes.names finds them)."""
    return WorkflowSummary(
        id=str(row.id), name=row.name, status=WorkflowStatus(row.status),
        owner=owner_of(row),
        priority=row.priority, effective_inputs=row.effective_inputs, preemptible=row.preemptible,
        submitted_by=row.submitted_by, submitted_at=row.submitted_at, updated_at=row.updated_at,
        stage_count=row.stage_count, stages_ended=row.stages_ended, annotations=row.annotations,
        user=names["user"], group=names["group"], organization=names["organization"])


class WorkflowList(Answer):
    workflows: list[WorkflowSummary]  # newest first unless `order_by` said otherwise
    next: str | None = None  # pass back as `?next=` for the following page; None: this was the last


class Stage(Answer):
    name: str
    kind: str
    status: StageStatus
    attempts: int
    exit_code: int | None
    node: str | None
    reason: str
    allocation_id: str | None
    priority: dict[str, int] | None
    started_at: Timestamp | None  # the current attempt's start (None: it never started)
    ended_at: Timestamp | None


class WorkflowDetail(Answer, omit_defaults=True):
    """`cluster` (and the rest of its cluster's label) only on a federated control plane's answer."""

    id: str
    name: str
    status: WorkflowStatus
    owner: Owner
    priority: int
    preemptible: bool | None
    submitted_by: str
    submitted_at: Timestamp
    annotations: dict[str, str]
    stages: list[Stage]
    user: str | None
    group: str | None
    organization: str | None
    cluster: str | None = None


def owner_of(row: WorkflowRow) -> Owner:
    o = row.owner
    return Owner(organization_id=o.organization_id, group_id=o.group_id, user_id=o.user_id, project=o.project)


def stage_of(row: StageRow) -> Stage:
    return Stage(name=row.name, kind=row.kind, status=StageStatus(row.status), attempts=row.attempts,
                 exit_code=row.exit_code, node=row.node, reason=row.reason,
                 allocation_id=str(row.allocation_id) if row.allocation_id is not None else None,
                 priority=row.priority, started_at=row.started_at, ended_at=row.ended_at)


def workflow_detail(row: DetailRow, names: dict[str, str | None]) -> WorkflowDetail:
    """The described workflow with its owner's names (`user`, `group`, `organization`)."""
    return WorkflowDetail(
        id=str(row.id), name=row.name, status=WorkflowStatus(row.status), owner=owner_of(row), priority=row.priority,
        preemptible=row.preemptible, submitted_by=row.submitted_by, submitted_at=row.submitted_at,
        annotations=row.annotations, stages=[stage_of(s) for s in row.stages], user=names["user"],
        group=names["group"], organization=names["organization"])


class ActivityEvent(Answer):
    time: Timestamp
    type: str
    stage: str | None
    message: str


def activity_event(row: ActivityRow) -> ActivityEvent:
    return ActivityEvent(time=row.time, type=row.type, stage=row.stage, message=row.message)


class WorkflowEvents(Answer):
    events: list[ActivityEvent]
    next: str | None = None  # pass back as `?next=` for the following page; None: this was the last


class WhyStage(Answer):
    stage: str
    allocation_id: str | None
    reason: str
    detail: str
    facts: dict[str, Any]


class WhyAnswer(Answer):
    stages: list[WhyStage]


class QueueStats(Answer, omit_defaults=True, kw_only=True):
    """The queue's depth per state, how many allocations in all (None: a federated cluster not asked), the priority
    expression, the scheduler's last pass and the shared resources' use; a federated control plane's adds each
    cluster's figures under its label, and the hub."""

    depth: dict[str, int]
    total: int | None
    priority: str
    last_pass: dict[str, Any]
    shared_resources: list[SharedRow]
    clusters: list[dict[str, Any]] | None = None
    hub: dict[str, Any] | None = None


class QueueEntry(Answer, omit_defaults=True, kw_only=True):
    """One allocation of the queue: the queue view's row, then its owner's user and group names (None: unknown);
    on a federated page, first the cluster it is queued on."""

    cluster: str | None = None
    id: str
    workflow_id: str
    stage: str
    attempt: int
    state: str
    priority: float
    priority_inputs: dict[str, int]
    node: str | None
    nodes: list[str]
    node_ids: list[str]
    epoch: int
    preemptible: bool
    resources: dict[str, Any]
    execute_timeout_seconds: float | None
    queued_at: Timestamp
    started_at: Timestamp | None
    ended_at: Timestamp | None
    organization_id: str
    group_id: str
    user_id: str
    exit_code: int | None
    reason: str
    project: str
    user: str | None
    group: str | None


def queue_entry(row: QueueRow, user: str | None, group: str | None, cluster: str | None = None) -> QueueEntry:
    return QueueEntry(
        cluster=cluster, id=str(row.id), workflow_id=str(row.workflow_id), stage=row.stage, attempt=row.attempt, state=row.state,
        priority=row.priority, priority_inputs=row.priority_inputs, node=row.node, nodes=row.nodes,
        node_ids=row.node_ids, epoch=row.epoch, preemptible=row.preemptible, resources=row.resources,
        execute_timeout_seconds=row.execute_timeout_seconds, queued_at=row.queued_at, started_at=row.started_at,
        ended_at=row.ended_at, organization_id=row.organization_id, group_id=row.group_id, user_id=row.user_id,
        exit_code=row.exit_code, reason=row.reason, project=row.project, user=user, group=group)


class QueuePage(Answer, omit_defaults=True, kw_only=True):
    """A caller who can own no work gets only `queue` (empty) and `mine`; a federated page adds `clusters` and
    `hub` after these, and each of its entries starts with its `cluster`."""

    queue: list[QueueEntry]
    total: int | None = None
    limit: int | None = None
    mine: bool
    clusters: list[dict[str, Any]] | None = None  # each cluster's label and how many of its allocations match
    hub: dict[str, Any] | None = None


class WorkflowDefinition(Answer):
    """A workflow's definition as a Fuzzfile (YAML), as it was submitted after the cluster's defaults: what
    `resubmit --edit` and the UI's "edit and resubmit" open."""

    id: str
    name: str
    definition: str


class WorkflowRetried(Answer):
    """The new workflow a retry submitted, the jobs it runs again (those that did not all finish) and warnings."""

    id: str
    retry_of: str
    jobs: list[str]
    warnings: list[Problem]

"""Answers about work: workflows (submitted, validated, stopped, listed, described), their activity, `why` their
stages wait, and the scheduler's queue and its figures."""

import enum
from typing import Any

from api.http.answers.base import Answer, Problem, Timestamp
from domain.fuzzfile.semantics import StageStatus  # the stage states as the domain names them, one list


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
    user_id: str | None = None
    group_id: str | None = None
    organization_id: str | None = None


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
    user: str | None
    group: str | None
    organization: str | None


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


class WorkflowDetail(Answer):
    id: str
    name: str
    status: WorkflowStatus
    owner: Owner
    priority: int
    preemptible: bool | None
    submitted_by: str
    submitted_at: Timestamp
    stages: list[Stage]
    user: str | None
    group: str | None
    organization: str | None
    cluster: str | None = None


class ActivityEvent(Answer):
    time: Timestamp
    type: str
    stage: str | None
    message: str


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


class QueueStats(Answer):
    depth: dict[str, int]


class QueuePage(Answer):
    queue: list[dict[str, Any]]  # one allocation each: ids, stage, state, priority and its inputs, nodes, times
    mine: bool
    total: int | None = None
    limit: int | None = None


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

"""Answers about work: workflows (submitted, validated, stopped, listed, described), their activity, `why` their
stages wait, and the scheduler's queue and its figures."""

from datetime import datetime
from typing import Any

from api.http.answers.base import Answer, Problem


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
    status: str
    owner: Owner
    priority: int
    effective_inputs: int
    preemptible: bool | None
    submitted_by: str
    submitted_at: datetime
    updated_at: datetime
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
    status: str
    attempts: int
    exit_code: int | None
    node: str | None
    reason: str
    allocation_id: str | None
    priority: dict[str, int] | None
    started_at: datetime | None  # the current attempt's start (None: it never started)
    ended_at: datetime | None


class WorkflowDetail(Answer):
    id: str
    name: str
    status: str
    owner: Owner
    priority: int
    preemptible: bool | None
    submitted_by: str
    submitted_at: datetime
    stages: list[Stage]
    user: str | None
    group: str | None
    organization: str | None
    cluster: str | None = None


class ActivityEvent(Answer):
    time: datetime
    type: str
    stage: str | None
    message: str


class WorkflowEvents(Answer):
    events: list[ActivityEvent]


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

"""The shapes of the API's answers: msgspec types that routes encode (or whose shape their answers are tested
against, tests/unit/api/test_openapi_answers.py) and that /v4/openapi.json describes as response schemas.

`@answers(Type)` on a route names its success answer; the OpenAPI document reads it from there."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

import msgspec

F = TypeVar("F", bound=Callable[..., Any])


def answers(kind: Any) -> Callable[[F], F]:
    def mark(endpoint: F) -> F:
        endpoint.answer = kind  # type: ignore[attr-defined]  # a mark the OpenAPI document reads
        return endpoint
    return mark


class Answer(msgspec.Struct, kw_only=True, omit_defaults=False):
    """The base of answer types: JSON objects with every field present."""


class Health(Answer):
    status: str


class Readiness(Answer):
    ready: bool
    position: int
    process: dict[str, Any]
    reason: str | None = None


class Version(Answer):
    version: str  # the roving package's version
    api: str  # the HTTP API's version (the /v4 prefix)
    python: str


class Problem(Answer):
    path: str
    message: str


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
    workflows: list[WorkflowSummary]


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


class Hold(Answer):
    id: str
    effect: str
    source: str
    reason: str
    by: str
    at: datetime


class Resources(Answer):
    cpu: int
    memory: int
    devices: dict[str, int]


class Node(Answer):
    id: str
    name: str
    status: str
    status_reason: str
    cpu: int
    memory: int
    devices: dict[str, int]
    annotations: dict[str, str]
    segment: str
    definition: str
    epoch: int
    allocations: list[str]
    accepts_new_work: bool
    removed: bool
    holds: list[Hold]
    allocated: Resources
    free: Resources


class NodeList(Answer):
    nodes: list[Node]


class Holds(Answer):
    holds: list[Hold]


class TokenPair(Answer):
    token: str
    expires_in: int
    refresh_token: str
    refresh_expires_in: int


class Whoami(Answer):
    user_id: str | None
    username: str
    role: str
    organization_id: str | None
    organization: str | None
    groups: list[str]
    group_names: list[str]
    uid: int | None


class QueueStats(Answer):
    depth: dict[str, int]


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


class QueuePage(Answer):
    queue: list[dict[str, Any]]  # one allocation each: ids, stage, state, priority and its inputs, nodes, times
    mine: bool
    total: int | None = None
    limit: int | None = None


class NodeEvent(Answer):
    position: int
    at: datetime
    type: str
    by: str
    message: str
    allocation: str | None


class NodeEvents(Answer):
    node: str
    events: list[NodeEvent]


class HoldCreated(Answer):
    hold_id: str


class Released(Answer):
    released: list[str]


class Evicted(Answer):
    evicted: list[str]  # the allocations taken off the node


class Removed(Answer):
    removed: bool


class Credential(Answer):
    id: str
    issued_at: datetime
    expires: datetime
    revoked_at: datetime | None
    revoked_by: str | None
    reason: str | None


class Credentials(Answer):
    credentials: list[Credential]


class CredentialRevoked(Answer):
    revoked: str
    fenced: bool
    lost: list[str]


class Readmitted(Answer):
    readmitted: bool


class TargetGroup(Answer):
    targets: list[str]
    labels: dict[str, str]


class Endpoint(Answer):
    """A persistent endpoint; a create answered before the views caught up names only its id and name."""

    id: str
    name: str
    owner_kind: str = ""
    owner_id: str = ""
    scope: str = ""
    path: str = ""
    url: str = ""
    status: str = ""
    workflow_id: str | None = None
    service: str | None = None
    target: str | None = None
    targets: list[str] = []
    pending_workflow_id: str | None = None
    reason: str | None = None
    last_failure: str | None = None


class EndpointList(Answer):
    endpoints: list[Endpoint]


class Deleted(Answer):
    id: str
    deleted: bool


class Created(Answer):
    """A new organization or group (`name`), or a new user (`username`)."""

    id: str
    name: str | None = None
    username: str | None = None


class Organization(Answer):
    id: str
    name: str
    priority: int
    owners: list[str]
    owner_names: list[str]


class Organizations(Answer):
    organizations: list[Organization]


class User(Answer):
    id: str
    organization_id: str | None
    username: str
    email: str
    role: str
    priority: int
    disabled: bool
    groups: list[str]
    group_names: list[str]
    uid: int | None = None


class Users(Answer):
    users: list[User]


class Group(Answer):
    id: str
    organization_id: str
    name: str
    priority: int
    preempt: list[str]
    members: dict[str, str]  # user id -> role
    explainers: list[str]
    preempt_names: list[str]
    member_names: dict[str, str]
    gid: int | None = None


class Groups(Answer):
    groups: list[Group]


class PriorityChanged(Answer):
    id: str
    priority: int


class PosixId(Answer):
    id: str
    uid: int | None = None
    gid: int | None = None


class PreemptList(Answer):
    id: str
    preempt: list[str]


class Membership(Answer):
    group: str
    user: str
    role: str | None = None
    removed: bool | None = None
    explain_allocation: bool | None = None


class Outcomes(Answer):
    outcomes: list[str]  # per alert: `NODE: placed | already held | refused: WHY | released | ...`


class Revoked(Answer):
    revoked: str  # the token's id (jti)
    already: bool | None = None


class Changed(Answer):
    changed: bool


class Unlocked(Answer):
    id: str
    unlocked: bool


class SecretCreated(Answer):
    id: str


class Secret(Answer):
    """A secret's name and scope, never its value."""

    id: str
    name: str
    scope: str
    group: str
    reference: str
    created_by: str
    created_at: datetime


class Secrets(Answer):
    secrets: list[Secret]

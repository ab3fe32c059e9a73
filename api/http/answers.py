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
        endpoint.answer = kind  # type: ignore[attr-defined]
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

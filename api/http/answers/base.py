"""The base of every answer type, `@answers` that names a route's answer, and the service's own answers:
health, readiness, version, and the `Problem` a validation names."""

from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, TypeVar

import msgspec

F = TypeVar("F", bound=Callable[..., Any])
# msgspec describes a datetime as a bare string; the format tells a generated client to parse it as one
Timestamp = Annotated[datetime, msgspec.Meta(extra_json_schema={"format": "date-time"})]


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


class Error(Answer):
    """Every refusal's body (api.http.errors): the message, and each problem with the field it names."""

    error: str
    errors: list[Problem]

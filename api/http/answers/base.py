"""The base of every answer type, `@answers` that names a route's answer, and the service's own answers:
health, readiness, version, and the `Problem` a validation names."""

from collections.abc import Callable
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

"""An endpoint's values apart from its history, and the checks on what it is given: the error a refusal raises,
its name rule, the binding it serves, the decision a binding command hands back, a target's check and a choice."""

from __future__ import annotations

import enum
import re
from datetime import datetime
from typing import TypeVar
from uuid import UUID

import msgspec

NAME = re.compile(r"^[a-z0-9_-]+$")
MAX_NAME = 63

E = TypeVar("E", bound=enum.Enum)  # the enum `choice` parses a value into


class EndpointError(Exception):
    """A command the endpoint's current state does not allow; the message says why."""


class Binding(msgspec.Struct, frozen=True, kw_only=True):
    workflow_id: UUID
    service: str
    host: str = ""
    port: int = 0
    bound_at: datetime | None = None
    # The TCP ports the service's own processes listened on when its agent reported it ready (None: not said)
    listening: tuple[int, ...] | None = None

    @property
    def target(self) -> str:
        return f"{self.host}:{self.port}"


class Decision(msgspec.Struct, frozen=True, kw_only=True):
    """What the caller must do after a binding command: cancel a workflow the endpoint no longer needs."""

    cancel_workflow: UUID | None = None
    reason: str = ""


def check_name(name: str) -> None:
    if not name or len(name) > MAX_NAME:
        raise EndpointError(f"endpoint name must be 1 to {MAX_NAME} characters (got {len(name)})")
    if not NAME.match(name):
        bad = ", ".join(repr(c) for c in dict.fromkeys(name) if not NAME.match(c))
        raise EndpointError(f"endpoint name {name!r} may use only lowercase letters, digits, '-' and '_' (found {bad})")


def check_target(name: str, host: str, port: int) -> None:
    if not host or not 0 < port < 65536:
        raise EndpointError(f"endpoint {name} needs a target host and a port 1-65535 (got {host!r}:{port})")


def choice(kind: type[E], value: object, what: str) -> E:
    try:
        return kind(value)
    except ValueError:
        allowed = " | ".join(str(m.value) for m in kind)
        raise EndpointError(f"{what} must be {allowed} (got {value!r})") from None

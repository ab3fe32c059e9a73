"""Deterministic ids: a name maps to one aggregate, so uniqueness needs no read model."""

from __future__ import annotations

from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

ROOT = uuid5(NAMESPACE_URL, "roving")


def org_id(name: str) -> UUID:
    return uuid5(ROOT, f"organization:{name}")


def user_id(username: str) -> UUID:
    return uuid5(ROOT, f"user:{username.lower()}")


def group_id(organization: UUID, name: str) -> UUID:
    return uuid5(ROOT, f"group:{organization}:{name}")


def node_id(name: str) -> UUID:
    return uuid5(ROOT, f"node:{name}")


def endpoint_id(name: str) -> UUID:
    return uuid5(ROOT, f"endpoint:{name}")


def allocation_id(workflow: UUID, stage: str, attempt: int) -> UUID:
    return uuid5(workflow, f"allocation:{stage}#{attempt}")


def hold_id(node: UUID, effect: str, by: str, at_iso: str) -> str:
    return str(uuid5(node, f"hold:{effect}:{by}:{at_iso}"))


MAX_POSIX_ID = 2**32 - 2  # the largest uid or gid: (uid_t)-1 means "no change" to chown and setreuid


def as_uuid(value: Any) -> UUID | None:
    """An id from a URL, an owner dict or an event as a UUID; None when it is none (the one parser of loose ids)."""
    if value is None or isinstance(value, UUID):
        return value
    try:
        return UUID(str(value))
    except ValueError:
        return None


def project_id(path: str) -> UUID:
    return uuid5(ROOT, f"project:{path}")


def ledger_id(kind: str, name: str) -> UUID:
    """The ledger of a project's quota (`project`, its path) or of a shared resource (`shared`, its name)."""
    return uuid5(ROOT, f"ledger:{kind}:{name}")

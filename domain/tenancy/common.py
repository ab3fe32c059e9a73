"""What the tenancy aggregates share: roles, principal sources, the domain error and caller-supplied time.

Every tenancy event records who caused it (`by`, and `role` where authority matters) and when (`at`,
which is also the event's timestamp): the audit trail is the log itself.
"""

from __future__ import annotations

import enum
from datetime import datetime

from domain.scheduler.priority import PRIORITY_LIMIT
from domain.timed import TimedAggregate

NAME_MAX = 64


class Role(str, enum.Enum):
    CLUSTER_ADMIN = "cluster_admin"
    ORG_OWNER = "org_owner"
    GROUP_OWNER = "group_owner"
    MEMBER = "member"
    USER = "user"


class Source(str, enum.Enum):
    """Where a request came from: people through the API, or one of the cluster's own components."""

    ADMIN = "admin"
    MONITORING = "monitoring"
    PROVISIONER = "provisioner"
    SCHEDULER = "scheduler"
    AGENT = "agent"
    WORKFLOW = "workflow"  # a running workflow's own token (FB_WORKFLOW_TOKEN): its owner, for a few acts only


class TenancyError(ValueError):
    """A tenancy command refused; `field` names what was wrong and `reason` says why."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class NotPermitted(TenancyError):
    """The caller's role does not allow this change."""


class PriorityMessage:
    """Mixed into PriorityUpdated events: the sentence an audit view or activity feed shows."""

    kind = "aggregate"
    old: int
    new: int
    by: str

    @property
    def message(self) -> str:
        return f"Priority updated: {self.kind} {self.old} -> {self.new} (by {self.by})"


class TenantAggregate(TimedAggregate):
    """An aggregate whose events carry the caller's time as their timestamp, never the clock's."""


def require_name(field: str, value: str) -> str:
    """A display name: not blank, at most NAME_MAX characters, surrounding spaces dropped."""
    if not isinstance(value, str) or not value.strip():
        raise TenancyError(field, "must not be empty")
    if len(value.strip()) > NAME_MAX:
        raise TenancyError(field, f"must be at most {NAME_MAX} characters, got {len(value.strip())}")
    return value.strip()


def require_priority(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TenancyError("priority", f"must be an integer, got {value!r}")
    if not -PRIORITY_LIMIT <= value <= PRIORITY_LIMIT:  # the priority expression adds them: int64 must hold the sum
        raise TenancyError("priority", f"must be between {-PRIORITY_LIMIT:,} and {PRIORITY_LIMIT:,}, got {value:,}")
    return value


def require_role(role: Role, allowed: set[Role], what: str) -> None:
    if role not in allowed:
        names = " or ".join(sorted(r.value for r in allowed))
        raise NotPermitted("role", f"only {names} may {what}; caller is {role_name(role)}")


def role_name(role: object) -> str:
    return role.value if isinstance(role, Role) else repr(role)


def require_aware(at: datetime) -> datetime:
    if at.tzinfo is None:
        raise TenancyError("at", "must be timezone-aware")
    return at

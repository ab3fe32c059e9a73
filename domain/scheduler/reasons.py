"""Why an allocation is where it is: typed reasons with detail, and when a reason deserves an event.

Reasons are recomputed every pass; `blocked_events` keeps the log quiet by asking for a
`SchedulingBlocked` event only when an allocation's cause changes, never on every tick.
"""
from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

import msgspec


class Reason(enum.Enum):
    READY_TO_SCHEDULE = "READY_TO_SCHEDULE"
    WAITING_DEPENDENCY = "WAITING_DEPENDENCY"
    INSUFFICIENT_RESOURCES = "INSUFFICIENT_RESOURCES"
    NODE_ANNOTATIONS_MISMATCH = "NODE_ANNOTATIONS_MISMATCH"
    NODE_HELD = "NODE_HELD"
    BLOCKED_BY_RESERVATION = "BLOCKED_BY_RESERVATION"
    BACKFILL_INELIGIBLE_NO_WALLTIME = "BACKFILL_INELIGIBLE_NO_WALLTIME"
    BACKFILL_INELIGIBLE_WOULD_DELAY_HEAD = "BACKFILL_INELIGIBLE_WOULD_DELAY_HEAD"
    BACKFILL_NO_FIT = "BACKFILL_NO_FIT"
    SERVICE_POOL_AT_CAPACITY = "SERVICE_POOL_AT_CAPACITY"
    PREEMPTION_PROTECTED = "PREEMPTION_PROTECTED"
    WAITING_FOR_PROVISION = "WAITING_FOR_PROVISION"  # a node is being made for it (domain.scheduler.provisioning)
    WAITING_FOR_VOLUME = "WAITING_FOR_VOLUME"  # a volume it mounts is being made (domain.storage_provisioner)
    PROJECT_QUOTA = "PROJECT_QUOTA"  # its project's (or an ancestor's) quota has no room for it now, or ever
    SHARED_RESOURCE = "SHARED_RESOURCE"  # not enough of a shared resource (a license) is free
    PROJECT_HELD = "PROJECT_HELD"  # its project was deleted, or its owner is no longer a member
    INVALID_REQUEST = "INVALID_REQUEST"  # its stored numbers or its priority cannot be computed with: set aside
    RUNNING = "RUNNING"
    FINISHED = "FINISHED"
    CANCELLED = "CANCELLED"
    PREEMPTED = "PREEMPTED"


SETTLED = frozenset({Reason.READY_TO_SCHEDULE, Reason.RUNNING, Reason.FINISHED, Reason.CANCELLED, Reason.PREEMPTED})

# Which detail entries name the cause; the rest (estimates, counts) may change without a new event.
_CAUSE_KEYS: dict[Reason, tuple[str, ...]] = {
    Reason.WAITING_DEPENDENCY: ("stages", "condition"),
    Reason.NODE_HELD: ("holds",),
    Reason.BLOCKED_BY_RESERVATION: ("head",),
    Reason.NODE_ANNOTATIONS_MISMATCH: ("annotations",),
    Reason.PREEMPTION_PROTECTED: ("victims",),
    Reason.INVALID_REQUEST: ("field",),
    Reason.WAITING_FOR_PROVISION: ("provisioner", "request", "state"),
    Reason.WAITING_FOR_VOLUME: ("volume",),
    Reason.PROJECT_QUOTA: ("project", "resource"),
    Reason.SHARED_RESOURCE: ("resource",),
    Reason.PROJECT_HELD: ("project", "cause"),
}


# Reasons whose event would tell a user nothing new after the other's: work behind the head that fits nowhere now
# (BACKFILL_NO_FIT) says what the head says when it cannot start (capacity_why: "all N usable nodes are busy"), and
# every waiting allocation moves from the one to the other as the queue drains. Its event would be that line again:
# in a burst, 1.5 SchedulingBlocked events a one-job workflow instead of 1.
_SAME_NEWS: dict[Reason, Reason] = {Reason.BACKFILL_NO_FIT: Reason.INSUFFICIENT_RESOURCES}


class Why(msgspec.Struct, frozen=True, kw_only=True):
    reason: Reason
    message: str = ""
    detail: dict[str, Any] = {}

    def cause(self) -> str:
        """What makes this reason news: its kind of reason and the detail entries that name the cause. A
        `SchedulingBlocked` event is written when it changes, and records it."""
        keys = _CAUSE_KEYS.get(self.reason, ())
        return f"{_news_kind(self.reason).value}:{[self.detail.get(k) for k in keys]!r}"

    def is_news_after(self, before: Why | None) -> bool:
        """Whether this reason deserves an event after `before` (None: nothing was said yet)."""
        if before is None:
            return True
        if before is self:
            return False
        if _news_kind(before.reason) is not _news_kind(self.reason):
            return True
        return (before.reason in _CAUSE_KEYS or self.reason in _CAUSE_KEYS) and before.cause() != self.cause()


def _news_kind(reason: Reason) -> Reason:
    return _SAME_NEWS.get(reason, reason)


def blocked_events(previous: Mapping[str, Why], current: Mapping[str, Why]) -> list[str]:
    """Allocation ids whose blocking cause is new this pass: each needs one `SchedulingBlocked` event."""
    return [allocation_id for allocation_id, why in current.items()
            if why.reason not in SETTLED and why.is_news_after(previous.get(allocation_id))]


def terminal(state: str) -> Why:
    """The reason for an allocation that is no longer queued, from its queue state name."""
    reason = {"RUNNING": Reason.RUNNING, "FINISHED": Reason.FINISHED, "FAILED": Reason.FINISHED,
              "CANCELED": Reason.CANCELLED, "CANCELLED": Reason.CANCELLED,
              "PREEMPTED": Reason.PREEMPTED, "EVICTED": Reason.PREEMPTED}[state.upper()]
    return Why(reason=reason, message=state.lower())

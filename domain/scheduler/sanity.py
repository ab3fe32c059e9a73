"""What a pass can compute with: a queued allocation whose stored numbers would break it is set aside.

Submissions are bounded now (domain.fuzzfile.limits, the tenancy priority range), but the log keeps what
earlier versions accepted: an execute timeout of 99999999999999999h, priorities at the int64 maximum. One
such allocation must cost its own placement only, never the pass that decides for everyone else.
"""
from __future__ import annotations

from datetime import datetime, timedelta

from domain.scheduler.reasons import Reason, Why
from domain.scheduler.snapshot import QueuedAllocation

INT64_MAX = 2**63 - 1  # what the event store's 64-bit encoding and CEL's int hold


def deadline(start: datetime, seconds: float | None) -> datetime | None:
    """`start + seconds`, or None (no known end) when there is no timeout or the date would pass year 9999."""
    if seconds is None:
        return None
    try:
        return start + timedelta(seconds=seconds)
    except (OverflowError, ValueError):  # ValueError: NaN seconds
        return None


def unusable(a: QueuedAllocation, now: datetime) -> tuple[str, str] | None:
    """(field, why) when the pass cannot decide about `a` from its stored numbers; None when it can."""
    # every pass asks this of every queued allocation: the common case (all in range) is checked first, in one go
    if not (0 <= a.cpu <= INT64_MAX and 0 <= a.memory <= INT64_MAX and 0 <= a.nodes <= INT64_MAX
            and all(0 <= count <= INT64_MAX for count in a.devices.values())):
        counts = {"cpu": a.cpu, "memory": a.memory, "nodes": a.nodes}
        counts.update({f"devices.{name}": count for name, count in a.devices.items()})
        for field, value in counts.items():
            if not 0 <= value <= INT64_MAX:
                return field, f"{field} is {value:,}, outside 0 to {INT64_MAX:,}"
    if a.nodes < 1:
        return "nodes", f"nodes is {a.nodes}; an allocation needs at least one node"
    timeout = a.execute_timeout
    if timeout is not None and (not timeout >= 0 or deadline(now, timeout) is None):
        return "execute_timeout", f"its execute timeout of {timeout:,}s ends past any date the scheduler can hold"
    try:
        now - a.submitted_at
    except (TypeError, OverflowError):  # a naive timestamp cannot be compared with the pass's clock
        return "submitted_at", f"its submission time {a.submitted_at} has no time zone"
    return None


def set_aside(field: str, message: str) -> Why:
    """The reason a user sees for work the pass skipped; resubmitting within today's limits fixes it."""
    return Why(reason=Reason.INVALID_REQUEST, message=f"not scheduled: {message}; resubmit it within the limits",
               detail={"field": field})

"""What the scheduler's last pass concluded beside the log: each allocation's `Why`, the priorities it ranked by,
and the pass's figures.

None of it is an event: the runner recomputes all of it every pass and keeps the latest in memory for the API and
the UI (api.scheduler.state). Only a changed blocked cause reaches the log (`reasons.blocked_events`), so the read
models built from the log never hold these; an answer that shows them joins them to the views when it is asked.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any
from uuid import UUID

import msgspec

from domain.scheduler.decisions import Decisions, ReservationHeld
from domain.scheduler.reasons import Why


class LastPass(msgspec.Struct, frozen=True, kw_only=True):
    """One pass's outputs, by allocation id as text (so UUID and str keys both find them); replaced whole."""

    reasons: dict[str, Why] = {}
    priorities: dict[str, float] = {}
    stats: dict[str, Any] = {}
    at: datetime | None = None

    def why(self, allocation_id: UUID | str) -> Why | None:
        return self.reasons.get(str(allocation_id))


def last_pass(decisions: Decisions, refused: int, elapsed: float, now: datetime) -> LastPass:
    """The pass as readers see it: `decisions` after the runner's commits (refused placements already explained),
    how many placements the log refused, and how long the decision took (seconds)."""
    priorities = {str(k): float(v) for k, v in decisions.priorities.items()}
    return LastPass(reasons=by_text(decisions.reasons), priorities=priorities,
                    stats=pass_figures(decisions, refused, elapsed, now), at=now)


def by_text(reasons: Mapping[Any, Why]) -> dict[str, Why]:
    return {str(k): v for k, v in reasons.items()}


def pass_figures(decisions: Decisions, refused: int, elapsed: float, now: datetime) -> dict[str, Any]:
    """`last_pass` in `/v4/scheduler/stats`: when, how long, and what the pass did."""
    counters = decisions.counters
    return {
        "last_pass_at": now.isoformat(), "last_pass_ms": round(elapsed * 1000, 3),
        "considered": counters.considered, "placed": counters.placed, "backfilled": counters.backfilled,
        "preempted": counters.preempted, "blocked": counters.blocked, "refused": refused,
        "reservation": reservation_figures(decisions.reservation),
    }


def reservation_figures(reservation: ReservationHeld | None) -> dict[str, Any] | None:
    if reservation is None:
        return None
    start = reservation.estimated_start.isoformat() if reservation.estimated_start else None
    return {"allocation_id": reservation.allocation_id, "node_ids": list(reservation.node_ids), "estimated_start": start}

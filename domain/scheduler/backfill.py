"""Backfill: with the head holding its reservation, lower work runs only where it cannot delay the head.

Work that fits nodes the reservation does not hold runs (long); work that ends before the head's start may use the
held nodes too (short); services never pass the head. Work that may do neither waits with the reason that names what
it lacks (no fit, no execute timeout, would end too late), or preempts within the guards. `_Pass`
(domain.scheduler.schedule) runs it: this is one part of the pass, kept apart as its own rule.
"""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from domain.scheduler.capacity import Slot
from domain.scheduler.cluster import Cluster
from domain.scheduler.config import SchedulerConfig
from domain.scheduler.decisions import Backfilled, Decisions
from domain.scheduler.eligibility import Candidates
from domain.scheduler.preemption import Outcome
from domain.scheduler.reasons import Reason, Why
from domain.scheduler.reservation import Reservation
from domain.scheduler.shared import SharedPool
from domain.scheduler.snapshot import Kind, QueuedAllocation, label


class Backfill:
    """The pass's behaviour behind the head (a part of `_Pass`, whose state and placing steps it uses)."""

    now: datetime
    config: SchedulerConfig
    cluster: Cluster
    shared: SharedPool
    reservation: Reservation | None
    d: Decisions
    _behind: tuple[Reservation, Why] | None = None  # the reason behind the head, made once per head

    if TYPE_CHECKING:  # the pass's own steps
        def block(self, a: QueuedAllocation, why: Why, provision: bool = True) -> None: ...
        def effective_why(self, a: QueuedAllocation, slots: list[Slot]) -> Why | None: ...
        def capacity_why(self, c: Candidates, a: QueuedAllocation, service: bool) -> Why: ...
        def occupy(self, a: QueuedAllocation, slots: list[Slot], long: bool = False) -> None: ...
        def preempt(self, a: QueuedAllocation, p: float, c: Candidates) -> Outcome | None: ...

    @property
    def head_reservation(self) -> Reservation:
        """The head's reservation: work is considered behind the head only once there is one (`_Pass.consider`)."""
        if self.reservation is None:
            raise RuntimeError("no head holds a reservation")
        return self.reservation

    def backfill(self, a: QueuedAllocation, p: float, c: Candidates) -> None:
        if a.kind is Kind.SERVICE:
            return self.block(a, self.behind_head("services are never backfilled"))
        short = a.kind is Kind.STAGING or self.ends_before_head(a)
        slots = self.cluster.find(c, a, long=True)
        long = slots is not None
        if slots is None and short:
            slots = self.cluster.find(c, a)
        if slots is not None:
            why = self.effective_why(a, slots) or self.backfill_shared_why(a, long, short)
            if why is not None:
                return self.block(a, why)
            return self.backfilled(a, p, slots, long and not (short and not self.shared.fits(a, long=True)))
        outcome = self.preempt(a, p, c) if self.shared.fits(a, long=not short) else None
        if outcome is not None and outcome.victims:
            return
        if outcome is not None and outcome.protected:
            return self.block(a, protected_why(outcome, self.config))
        self.block(a, self.backfill_why(a, c))

    def backfill_shared_why(self, a: QueuedAllocation, long: bool, short: bool) -> Why | None:
        """Short work may use any free share; long work only what the head's reservation leaves."""
        if not a.shared or self.shared.fits(a, long=long and not short):
            return None
        return self.shared.why(a, long=not short, extra=self.behind_head().detail)

    def ends_before_head(self, a: QueuedAllocation) -> bool:
        start = self.reservation.start if self.reservation else None
        if a.execute_timeout is None or start is None:
            return False
        return self.now + timedelta(seconds=a.execute_timeout) <= start

    def backfilled(self, a: QueuedAllocation, p: float, slots: list[Slot], long: bool) -> None:
        self.occupy(a, slots, long)
        nodes = tuple(slot.view.id for slot in slots)
        head = self.head_reservation.head.id
        self.d.backfills.append(Backfilled(allocation_id=a.id, node_ids=nodes, priority=p,
                                           ends_before_head=not long, head_id=head))
        self.d.reasons[a.id] = Why(reason=Reason.READY_TO_SCHEDULE, message=f"backfilled behind {head}",
                                   detail={"nodes": list(nodes), "backfilled": True})
        self.d.counters.backfilled += 1

    def backfill_why(self, a: QueuedAllocation, c: Candidates) -> Why:
        detail = self.behind_head().detail
        if self.cluster.find(c, a) is None:
            why = self.capacity_why(c, a, False)
            return Why(reason=Reason.BACKFILL_NO_FIT, message=why.message, detail=dict(why.detail, **detail))
        if a.execute_timeout is None:
            return Why(reason=Reason.BACKFILL_INELIGIBLE_NO_WALLTIME, detail=detail,
                       message="fits now, but without an execute timeout it could delay the head")
        ends = self.now + timedelta(seconds=a.execute_timeout)
        return Why(reason=Reason.BACKFILL_INELIGIBLE_WOULD_DELAY_HEAD, detail=dict(detail, would_end=iso(ends)),
                   message=f"would run until {iso(ends)}, past the head's start")

    def behind_head(self, note: str = "") -> Why:
        res = self.head_reservation
        if not note and self._behind is not None and self._behind[0] is res:  # asked of all the work behind the head
            return self._behind[1]
        start = iso(res.start)
        message = f"waiting behind {label(res.head)} (estimated start {start or 'unknown'})"
        why = Why(reason=Reason.BLOCKED_BY_RESERVATION, message=f"{message}; {note}" if note else message,
                  detail={"head": res.head.id, "estimated_start": start})
        if not note:
            self._behind = (res, why)
        return why


def protected_why(outcome: Outcome, config: SchedulerConfig) -> Why:
    names = [label(v) for v in outcome.protected]
    return Why(reason=Reason.PREEMPTION_PROTECTED,
               message=f"could preempt {names[0]}, but it was preempted {config.max_preemptions_per_window} "
                       f"times in the last {config.preemption_window_seconds:g}s",
               detail={"victims": [v.id for v in outcome.protected],
                       "max_preemptions_per_window": config.max_preemptions_per_window,
                       "window_seconds": config.preemption_window_seconds})


def iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None

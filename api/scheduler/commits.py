"""A pass's decisions committed to the log: preemptions, placements in batches, and the blocked causes that changed.

Each commit goes through the application with optimistic concurrency: a decision made on a stale view is refused
(the allocation moved on, the node filled up), remembered with its reason for `why` and the pass's figures, and the
next pass decides again. Nothing here is kept past a pass except the causes already written as events (`announced`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

import structlog
from eventsourcing.persistence import OperationalError

from api import metrics
from domain.app import Conflict, NotFound, Roving, StaleEpoch
from domain.scheduler import Decisions, Why, blocked_events
from domain.scheduler.reasons import Reason
from projections.views import Views

log = structlog.get_logger("roving.scheduler")
REFUSED = (Conflict, NotFound, StaleEpoch, ValueError, RuntimeError)
MAX_BLOCKED_EVENTS_PER_PASS = 256  # the rest are written on the next passes, never lost
PLACEMENTS_PER_COMMIT = 100  # a placement is about four events; an atomic batch holds at most 1,000


class Commits:
    """Commits one pass at a time for the runner (its thread only); `refused` is the current pass's refusals."""

    def __init__(self, roving: Roving, views: Views) -> None:
        self.roving, self.views = roving, views
        self.announced: dict[str, Why] = {}  # the causes already written as SchedulingBlocked events
        self.refused: dict[str, str] = {}  # this pass's placements the log refused, with the reason

    def decisions(self, decisions: Decisions, now: datetime) -> None:
        """Preempt, then place (a pass's placements in as few commits as a batch allows)."""
        self.refused = {}
        for preemption in decisions.preemptions:
            evicted = sum(self.attempt(self.roving.preempt, UUID(victim), text, "scheduler", now)
                          for victim, text in zip(preemption.victim_ids, preemption.victim_texts, strict=True))
            metrics.PREEMPTIONS.inc(evicted)
            if evicted:
                metrics.BLOCKED_BEFORE_EVICTION.observe(self.waited(preemption.preemptor_id, now))
            self.place(preemption.preemptor_id, preemption.node_ids, now, metrics.PLACEMENTS,
                       preemption.preemptor_text)
        chosen = [(p.allocation_id, p.node_ids, metrics.PLACEMENTS) for p in decisions.placements]
        chosen += [(b.allocation_id, b.node_ids, metrics.BACKFILLS) for b in decisions.backfills]
        for start in range(0, len(chosen), PLACEMENTS_PER_COMMIT):
            self.place_all(chosen[start:start + PLACEMENTS_PER_COMMIT], now)
        metrics.NEAR_MISSES.set(decisions.counters.near_miss_priority_gaps)

    def place_all(self, chosen: list, now: datetime) -> None:
        """Placements in one commit (the log takes a batch for about what one commit costs); each refused one is
        remembered with its reason. When the commit as a whole fails, each is placed on its own."""
        waited = {allocation: self.waited(allocation, now) for allocation, _, _ in chosen}
        try:
            outcome = self.roving.place_all([(UUID(a), [UUID(n) for n in nodes]) for a, nodes, _ in chosen],
                                            "scheduler", now)
        except OperationalError:  # the log is down: the pass is retried, nothing was placed
            raise
        except Exception:  # noqa: BLE001 - one placement broke the batch: place them one by one
            log.exception("scheduler.batch_placement_failed", placements=len(chosen))
            for allocation, nodes, counter in chosen:
                self.place(allocation, nodes, now, counter)
            return
        for allocation, _, counter in chosen:
            result = outcome.get(UUID(allocation), "not placed")
            if isinstance(result, str):
                self.refuse(allocation, result)
            else:
                counter.inc()
                metrics.READY_WAIT.observe(waited[allocation])

    def place(self, allocation: str, node_ids: Any, now: datetime, counter: Any, note: str = "") -> None:
        """Place one allocation; its wait since READY is observed only when the placement committed. A refused
        placement (a stale decision: the node filled or the allocation moved on) is remembered as refused."""
        waited = self.waited(allocation, now)
        try:
            self.roving.place(UUID(allocation), [UUID(n) for n in node_ids], "scheduler", now, note)
        except REFUSED as error:
            self.refuse(allocation, str(error))
            return
        counter.inc()
        metrics.READY_WAIT.observe(waited)

    def refuse(self, allocation: str, reason: str) -> None:
        metrics.STALE_DECISIONS.inc()
        log.info("scheduler.placement_refused", allocation_id=allocation, reason=reason)
        self.refused[allocation] = reason

    def explain_refusals(self, decisions: Decisions) -> None:
        """`why` and the pass counters say what happened: a refused placement is not a placement."""
        for allocation, error in self.refused.items():
            backfilled = any(b.allocation_id == allocation for b in decisions.backfills)
            if backfilled:
                decisions.counters.backfilled -= 1
            else:
                decisions.counters.placed -= 1
            decisions.reasons[allocation] = Why(
                reason=Reason.READY_TO_SCHEDULE, message=f"placement refused ({error}); the next pass decides again",
                detail={"refused": error})

    def waited(self, allocation: str, now: datetime) -> float:
        since = self.views.queue.ready_since(allocation)
        return max(0.0, (now - since).total_seconds()) if since is not None else 0.0

    def announce_blocked(self, reasons: dict[str, Why], now: datetime) -> None:
        """A `SchedulingBlocked` event per allocation whose cause is new; the same cause stays quiet."""
        fresh = blocked_events(self.announced, reasons)
        later = set(fresh[MAX_BLOCKED_EVENTS_PER_PASS:])
        written = [(UUID(allocation), reasons[allocation]) for allocation in fresh[:MAX_BLOCKED_EVENTS_PER_PASS]]
        if written:  # one commit for the pass's new causes, not one each
            try:
                metrics.BLOCKED_EVENTS.inc(self.roving.record_blocked_all(written, "scheduler", now))
            except REFUSED as error:
                metrics.STALE_DECISIONS.inc()
                log.info("scheduler.decision_refused", command="record_blocked_all", reason=str(error))
        self.announced = {k: v for k, v in reasons.items() if k not in later}

    def attempt(self, command: Any, *args: Any) -> bool:
        """Run one command of the pass; a refusal (a stale decision) is counted and logged, never raised."""
        try:
            return command(*args) is not False  # False: the command had nothing to do
        except REFUSED as error:
            metrics.STALE_DECISIONS.inc()
            log.info("scheduler.decision_refused", command=command.__name__, reason=str(error))
            return False

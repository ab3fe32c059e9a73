"""The scheduler runner: holds the leader lease, runs the pure decision function, commits its decisions.

Decisions are committed with optimistic concurrency through the application: a decision made on a
stale view fails harmlessly (the allocation moved on, the node filled up) and the next pass decides again.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from datetime import datetime, timezone
from uuid import UUID

import structlog

from api import metrics
from domain.app import Conflict, NotFound, StaleEpoch
from domain.scheduler import schedule

log = structlog.get_logger("roving.scheduler")
REFUSED = (Conflict, NotFound, StaleEpoch, ValueError, RuntimeError)
POLL_SECONDS = 0.2


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class SchedulerRunner:
    """One thread: wake on new events or the interval backstop; lead, decide, commit; watch node leases."""

    def __init__(self, roving, views, tailer, leases, holder: str | None = None, lease_grace: float = 0.0) -> None:
        self.roving, self.views, self.tailer, self.leases = roving, views, tailer, leases
        self.holder = holder or f"{socket.gethostname()}:{os.getpid()}"
        self.wake = threading.Event()
        self.stopping = threading.Event()
        self.leading = False
        self.started_at = time.monotonic()
        self.lease_grace = lease_grace or (leases.ttl if leases else 0)
        self._thread = threading.Thread(target=self._run, name="roving-scheduler", daemon=True)

    def start(self) -> SchedulerRunner:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.wake.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        """Wake on new events (the views moved), on the interval backstop, and to renew the lease."""
        seen, last_pass = -1, 0.0
        while not self.stopping.is_set():
            self.wake.wait(timeout=POLL_SECONDS)
            self.wake.clear()
            interval = float(self.roving.scheduler_config().interval_seconds)
            moved = self.views.position != seen
            due = time.monotonic() - last_pass >= min(interval, self.leases.ttl / 3 if self.leases else interval)
            if not (moved or due):
                continue
            seen = self.views.position
            try:
                self.tick("event" if moved else "interval")
                last_pass = time.monotonic()
            except Exception:  # noqa: BLE001 - the leader must keep leading; the failure is logged in full
                log.exception("scheduler.tick_failed")

    def tick(self, cause: str = "manual") -> None:
        self.leading = self.leases.hold_leadership(self.holder) if self.leases else True
        if not self.leading:
            return
        if self.tailer is not None:
            self.tailer.wait_for(self.roving.last_position, timeout=5)
        self.check_leases()
        metrics.WAKEUPS.labels(cause=cause).inc()
        self.run_pass()

    def run_pass(self):
        now = utcnow()
        started = time.perf_counter()
        decisions = schedule(self.views.scheduler_snapshot(now), self.roving.scheduler_config(), now)
        elapsed = time.perf_counter() - started
        metrics.PASS_SECONDS.observe(elapsed)
        self._commit(decisions, now)
        self.views.why.set(decisions.reasons)
        if hasattr(self.views.queue, "set_priorities"):
            self.views.queue.set_priorities(decisions.priorities)
        self._record_stats(decisions, elapsed, now)
        return decisions

    def _commit(self, decisions, now: datetime) -> None:
        for preemption in decisions.preemptions:
            for victim, text in zip(preemption.victim_ids, preemption.victim_texts):
                if self._try(self.roving.preempt, UUID(victim), text, "scheduler", now):
                    metrics.PREEMPTIONS.inc()
            if self._try(self.roving.place, UUID(preemption.preemptor_id), [UUID(n) for n in preemption.node_ids],
                         "scheduler", now):
                metrics.PLACEMENTS.inc()
        for placement in decisions.placements:
            if self._try(self.roving.place, UUID(placement.allocation_id), [UUID(n) for n in placement.node_ids],
                         "scheduler", now):
                metrics.PLACEMENTS.inc()
        for backfill in decisions.backfills:
            if self._try(self.roving.place, UUID(backfill.allocation_id), [UUID(n) for n in backfill.node_ids],
                         "scheduler", now):
                metrics.BACKFILLS.inc()
        metrics.NEAR_MISSES.set(decisions.counters.near_miss_priority_gaps)

    def _try(self, command, *args) -> bool:
        try:
            command(*args)
            return True
        except REFUSED as error:
            metrics.STALE_DECISIONS.inc()
            log.info("scheduler.decision_refused", command=command.__name__, reason=str(error))
            return False

    def check_leases(self) -> None:
        """Nodes whose heartbeat lease lapsed go OFFLINE; their work is retried or failed by policy."""
        if self.leases is None or time.monotonic() - self.started_at < self.lease_grace:
            return
        for node in self.views.nodes.list():
            if str(getattr(node, "status", "")) in ("OFFLINE", "NodeStatus.OFFLINE") or getattr(node, "removed", False):
                continue
            if not self.leases.alive(str(node.id)):
                log.warning("node.lease_lapsed", node=node.name)
                metrics.NODES_LOST.inc()
                self._try(self.roving.node_lost, UUID(str(node.id)), utcnow())

    def _record_stats(self, decisions, elapsed: float, now: datetime) -> None:
        if hasattr(self.views.queue, "set_pass_stats"):
            counters = decisions.counters
            self.views.queue.set_pass_stats({
                "last_pass_at": now.isoformat(), "last_pass_ms": round(elapsed * 1000, 3),
                "considered": counters.considered, "placed": counters.placed, "backfilled": counters.backfilled,
                "preempted": counters.preempted, "blocked": counters.blocked,
                "reservation": _reservation(decisions.reservation),
            })


def _reservation(reservation) -> dict | None:
    if reservation is None:
        return None
    start = reservation.estimated_start.isoformat() if reservation.estimated_start else None
    return {"allocation_id": reservation.allocation_id, "node_ids": list(reservation.node_ids), "estimated_start": start}

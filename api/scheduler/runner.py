"""The scheduler runner: holds the leader lease, wakes on the log, runs the pure decision function, commits.

Decisions are committed with optimistic concurrency through the application (api.scheduler.commits): a decision
made on a stale view fails harmlessly (the allocation moved on, the node filled up) and the next pass decides again.
Each pass's reasons, priorities and figures go to the runner's own `state` (api.scheduler.state), never the views.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol
from uuid import UUID

import structlog
from eventsourcing.persistence import OperationalError

from adapters.background import Background
from api import metrics
from api.scheduler.commits import Commits
from api.scheduler.state import SchedulerState
from api.scheduler.submit_gaps import orphaned_allocations, unallocated_workflows
from api.scheduler.sweep import emptied_nodes, stray_allocations
from domain.app import Roving
from domain.scheduler import schedule
from domain.scheduler.last_pass import last_pass
from projections.base import kind_of
from projections.views import Views

log = structlog.get_logger("roving.scheduler")
POLL_SECONDS = 0.2  # without log signals: how often the views' position is compared
# The runner's own commits (a placement, a blocked cause) need no pass of their own; anything else that moves
# work or capacity (readied, ended, requeued, a node or the config changed) wakes it.
# Events that give a pass nothing to do: its own decisions, a submission (its allocations, which land after it or
# with it, wake the pass), and the lines an agent tells about a running attempt.
OWN_EVENTS = frozenset({"Allocation.Placed", "Allocation.SchedulingBlocked", "Workflow.StageStarted",
                        "Workflow.Submitted", "Workflow.StageNoted", "Workflow.ImageProgressed",
                        "Workflow.TransferProgressed"})
WAKING_AGGREGATES = ("Workflow.", "Allocation.", "Node.", "ClusterConfig.", "Project.")  # Project: quota, members
LAPSE_CONFIRM_SECONDS = 1.0  # a lapsed lease is read lapsed again at least this much later before its node is lost
UNALLOCATED_EVERY = 10.0  # seconds between sweeps for what submissions saved apart left (the first pass sweeps)
UNALLOCATED_QUIET = 5.0  # a workflow changed more recently may still be saving its allocations
RESTART_GRACE_SECONDS = 10.0  # on top of one lease: agents retry their heartbeat every 2 s, each call up to 5 s
# A pass woken by events starts at least this long after the last one ended: a stream of submissions and reports
# is taken by fewer passes (each reads the whole queue), while an idle cluster's next pass starts at once.
PASS_GAP = 0.01
RENEW_AFTER = 0.25  # of the lease TTL: a pass renews the leader lease only when this much of it has passed


class RunnerLeases(Protocol):
    """What the runner asks of the leases (adapters.leases.Leases): the leader lease, and which nodes are alive."""

    ttl: float

    def hold_leadership(self, holder: str) -> bool: ...

    def alive(self, node: str) -> bool: ...


class CaughtUp(Protocol):
    """The tailer (adapters.follower.Follower), waited on so a pass sees the runner's own last commit."""

    def wait_for(self, position: int, timeout: float | None = None) -> bool: ...


class Signals(Protocol):
    """api.composition.wakeups.LogSignals: calls each listener with every batch the views applied."""

    def listen(self, listener: Callable[[Sequence[tuple[int, Any]]], None]) -> None: ...


def utcnow() -> datetime:
    return datetime.now(UTC)


class SchedulerRunner:
    """One thread: wake on new events or the interval backstop; lead, decide, commit; watch node leases.

    With `signals` (api.composition.wakeups.LogSignals), a pass follows the batch that made work ready or freed capacity
    (a burst arriving during a pass is one more pass); without, the views' position is polled."""

    def __init__(self, roving: Roving, views: Views, tailer: CaughtUp | None, leases: RunnerLeases | None,
                 holder: str | None = None, lease_grace: float = 0.0, signals: Signals | None = None,
                 state: SchedulerState | None = None) -> None:
        self.roving, self.views, self.tailer, self.leases = roving, views, tailer, leases
        self.signals = signals
        self.holder = holder or f"{socket.gethostname()}:{os.getpid()}"
        self.background = Background(self._run, "roving-scheduler")
        self.wake, self.stopping = self.background.wake, self.background.stopping
        self.leading = self._told = False  # _told: as the log last said (scheduler.leading / standing_by)
        self.started_at = time.monotonic()
        # A (re)started control plane first lets every agent reach it: leases lapsed while it was down, and an
        # agent whose node were declared lost now would have its exit reports refused as fenced.
        self.lease_grace = lease_grace or (leases.ttl + RESTART_GRACE_SECONDS if leases else 0)
        self.commits = Commits(roving, views)  # what a pass decided, committed (and what the log refused)
        self.state = state or SchedulerState()  # the last pass, for the API and the UI (api.scheduler.state)
        self._renewed = self._leases_checked = float("-inf")  # monotonic times of the last renewal and check
        self._lapsed: dict[str, float] = {}  # node id -> when its lease was first seen lapsed (not yet confirmed)
        self._passed = float("-inf")  # monotonic time the last pass ended
        self._unallocated_swept = float("-inf")  # monotonic time of the last sweep of api.scheduler.submit_gaps
        self._standby_until = float("-inf")  # not leading: when to ask for the lease again
        self._config: tuple[int, object] | None = None  # (config generation, the scheduler config read then)
        self._config_generation = 0  # counts ClusterConfig events applied: the cached config is stale when it moved
        self.after_pass: list = []  # called with (decisions, now) after each pass's commits (api.provisioning.asks)
        if signals is not None:  # last: a batch may arrive on the tailer's thread at once, and observe reads the above
            signals.listen(self.observe)

    def start(self) -> SchedulerRunner:
        self.background.start()
        return self

    def stop(self) -> None:
        self.background.stop()  # a runner driven by tick() alone was never started: nothing to join

    def observe(self, batch: Sequence[tuple[int, Any]]) -> None:
        """On the tailer's thread, after the views applied `batch`: wake for news about work or capacity."""
        kinds = [kind_of(event) for _, event in batch]
        if any(kind.startswith("ClusterConfig.") for kind in kinds):
            self._config_generation += 1
        if any(_wakes(kind) for kind in kinds):
            self.wake.set()

    def config(self, fresh: bool = False):
        """The scheduler config; with signals, read from the log again only after a ClusterConfig event (or when
        `fresh`), so an event-driven pass costs no config reads."""
        generation = self._config_generation
        if fresh or self.signals is None or self._config is None or self._config[0] != generation:
            self._config = (generation, self.roving.scheduler_config())
        return self._config[1]

    def _run(self) -> None:
        """Wake on new events (signalled, or the views moved), on the interval backstop, and to renew the lease."""
        seen, last_pass, period, interval = -1, 0.0, 1.0, 1.0
        while not self.stopping.is_set():
            backstop = max(0.0, last_pass + period - time.monotonic())
            signalled = self.wake.wait(timeout=backstop if self.signals is not None else POLL_SECONDS)
            if signalled:  # passes back to back under a stream of events: let the next one take them all
                self.stopping.wait(max(0.0, self._passed + PASS_GAP - time.monotonic()))
            self.wake.clear()
            try:  # the log may be down (the config is read from it): the thread must outlive any outage
                interval = float(self.config(fresh=not signalled).interval_seconds)
                period = min(interval, self.leases.ttl / 3 if self.leases else interval)
                moved = signalled if self.signals is not None else self.views.position != seen
                due = time.monotonic() - last_pass >= period
                if not (moved or due):
                    continue
                seen, last_pass = self.views.position, time.monotonic()  # a failing pass is retried at the period
                self.tick("event" if moved else "interval")
            except OperationalError as error:
                log.warning("scheduler.log_unavailable", error=str(error))
                self.stopping.wait(min(interval, 1.0))
            except Exception:  # noqa: BLE001 - the leader must keep leading; the failure is logged in full
                log.exception("scheduler.tick_failed")

    def tick(self, cause: str = "manual") -> None:
        try:
            self._tick(cause)
        finally:
            self._passed = time.monotonic()

    def _tick(self, cause: str) -> None:
        if not self.lead():
            self.commits.announced = {}  # another leader writes them meanwhile; the allocation skips repeats
            return
        if self.tailer is not None:
            self.tailer.wait_for(self.roving.last_position, timeout=5)
        if cause != "event" or time.monotonic() - self._leases_checked >= self._lease_period():
            self.check_leases()  # node leases lapse on the TTL's scale: a burst of passes need not ask each time
        metrics.WAKEUPS.labels(cause=cause).inc()
        self.run_pass()

    def lead(self) -> bool:
        """Hold the leader lease. It is renewed once RENEW_AFTER of its TTL has passed since the last renewal
        (timed from before that request, so the lease outlives the belief by the rest of the TTL)."""
        if self.leases is None:
            self.leading = True
            return True
        asked = time.monotonic()
        if self.leading and asked - self._renewed < self.leases.ttl * RENEW_AFTER:
            return True
        if not self.leading and asked < self._standby_until:  # a standby (another API worker) asks on its pace,
            return False                                      # not on every batch the log delivers
        self.leading = self.leases.hold_leadership(self.holder)
        if self.leading != self._told:  # a stall's log says whether any pass could run (an R3 stream's election)
            self._told = self.leading
            log.info("scheduler.leading" if self.leading else "scheduler.standing_by", holder=self.holder)
        self._renewed = asked if self.leading else float("-inf")
        self._standby_until = float("-inf") if self.leading else asked + self.leases.ttl * RENEW_AFTER
        return self.leading

    def _still_leads(self) -> bool:
        """Before a pass commits: a lease renewed less than RENEW_AFTER of its TTL ago holds (nobody else can lead
        for the rest of it); after a longer pass (a stalled or frozen process) it is renewed first, which fails on
        the lease's revision if it lapsed or another runner took it, and the pass's decisions are then dropped."""
        if self.leases is None or time.monotonic() - self._renewed < self.leases.ttl * RENEW_AFTER:
            return True
        self.leading = False
        return self.lead()

    def _lease_period(self) -> float:
        return self.leases.ttl / 3 if self.leases else 0.0

    def run_pass(self):
        now = utcnow()
        self.sweep(now)
        started = time.perf_counter()
        decisions = schedule(self.views.scheduler_snapshot(now), self.config(), now)
        elapsed = time.perf_counter() - started
        metrics.PASS_SECONDS.observe(elapsed)
        if not self._still_leads():
            log.warning("scheduler.pass_outlived_lease", elapsed_s=round(elapsed, 3))
            return decisions
        self.commits.decisions(decisions, now)
        for hook in self.after_pass:
            hook(decisions, now)
        self.commits.explain_refusals(decisions)
        self.commits.announce_blocked(decisions.reasons, now)
        self.state.publish(last_pass(decisions, len(self.commits.refused), elapsed, now))
        return decisions

    def sweep(self, now: datetime) -> None:
        """Work that landed on a node just after it went (or took an evict hold) is lost as if it had been there; a
        node whose deprovision hold waited for its work goes once the work ended (api.scheduler.sweep)."""
        for allocation in stray_allocations(self.views):
            if self.commits.attempt(self.roving.evict_stray, allocation, now):
                log.warning("scheduler.stray_evicted", allocation_id=str(allocation))
        for node in emptied_nodes(self.views):
            self.commits.attempt(self.roving.deprovision_emptied, node, now)
        if time.monotonic() - self._unallocated_swept >= UNALLOCATED_EVERY:  # what a submission saved apart left
            self._unallocated_swept = time.monotonic()
            for workflow in unallocated_workflows(self.views, now - timedelta(seconds=UNALLOCATED_QUIET)):
                if self.commits.attempt(self.roving.strays.allocate_ready, workflow, now):
                    log.warning("scheduler.unallocated_requested", workflow_id=str(workflow))
            for allocation in orphaned_allocations(self.views):
                if self.commits.attempt(self.roving.strays.withdraw_orphan, allocation, now):
                    log.warning("scheduler.orphan_withdrawn", allocation_id=str(allocation))

    def check_leases(self) -> None:
        """Nodes whose heartbeat lease lapsed go OFFLINE; their work is retried or failed by policy."""
        if self.leases is None or time.monotonic() - self.started_at < self.lease_grace:
            return
        now = self._leases_checked = time.monotonic()
        lapsed: dict[str, float] = {}
        for node in self.views.nodes.list():
            if str(getattr(node, "status", "")) in ("OFFLINE", "NodeStatus.OFFLINE") or getattr(node, "removed", False):
                continue
            if not self.leases.alive(str(node.id)):
                # seen lapsed on two checks LAPSE_CONFIRM_SECONDS apart: one read can come from a server of an R3
                # cluster that is catching up after a restart and misses every lease at once (both nodes of a
                # 3-server test went OFFLINE, their jobs failed, in the same instant after a server came back)
                since = lapsed[str(node.id)] = self._lapsed.get(str(node.id), now)
                if now - since < LAPSE_CONFIRM_SECONDS:
                    continue
                log.warning("node.lease_lapsed", node=node.name)
                metrics.NODES_LOST.inc()
                self.commits.attempt(self.roving.node_lost, UUID(str(node.id)), utcnow())
        self._lapsed = lapsed


def _wakes(kind: str) -> bool:
    return kind.startswith(WAKING_AGGREGATES) and kind not in OWN_EVENTS


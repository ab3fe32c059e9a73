"""The refused-alerts loop: a monitoring hold the ceiling refused is placed as soon as the ceiling or the node set
makes room (an admin raises nodeHealth.maxMonitoringHeldPercent, a node joins, another monitoring hold is
released), not when Alertmanager next repeats the alert (an hour later).

It runs beside the scheduler, acting only while that runner leads, so of several API workers one commits. Each tick
reads the nodes view; only a node whose refused hold would now fit costs a command (`retry_refused_holds`), which
decides again on the node as stored, so a stale view places nothing wrong."""

from __future__ import annotations

import inspect
import threading
from datetime import UTC, datetime
from typing import Any

import structlog

from adapters.background import Background
from domain.holds import REFUSAL_FRESH_FOR, NodeSummary, monitoring_hold_allowed

log = structlog.get_logger("roving.refused_alerts")
DEFAULT_INTERVAL = 2.0
SETTLE_SECONDS = 5.0
# Monitoring holds are decided one at a time in a process, each on views that show the last one (the webhook,
# api.http.routes.alerts, takes it too): each hold saves only its own node, so two decided on one view would both
# pass a ceiling that allows one, and no write race would catch it.
DECIDING = threading.Lock()


def settled(follower: Any, roving: Any) -> None:
    """Wait until the views show the application's last save (read-your-writes for the next decision)."""
    position = roving.last_position
    if position and follower is not None and not inspect.iscoroutinefunction(follower.wait_for):
        follower.wait_for(position, timeout=SETTLE_SECONDS)


class RefusedAlertsLoop:
    def __init__(self, roving: Any, views: Any, runner: Any, interval: float = DEFAULT_INTERVAL,
                 follower: Any = None) -> None:
        self.roving, self.views, self.runner, self.interval = roving, views, runner, interval
        self.follower = follower  # what feeds the views (its wait_for): a decision waits for the last one to show
        self.background = Background(self._run, "roving-refused-alerts")
        self.stopping = self.background.stopping

    def start(self) -> RefusedAlertsLoop:
        self.background.start()
        return self

    def stop(self) -> None:
        self.background.stop()

    def _run(self) -> None:
        while not self.stopping.wait(self.interval):
            if not getattr(self.runner, "leading", True):
                continue
            try:
                self.tick(datetime.now(UTC))
            except Exception:  # noqa: BLE001 - one failed pass must not end the loop; the next tick tries again
                log.exception("refused_alerts.tick_failed")

    def tick(self, now: datetime) -> list[str]:
        """Retry every node whose refused hold now fits; returns the holds placed."""
        with DECIDING:
            placed = self._retry(now)
            if placed:
                settled(self.follower, self.roving)
        return placed

    def _retry(self, now: datetime) -> list[str]:
        nodes = [n for n in self.views.nodes.nodes() if not n.removed]
        waiting = [n for n in nodes if any(now - r.at <= REFUSAL_FRESH_FOR for r in n.refused_holds.values())]
        if not waiting:
            return []
        percent = self.roving.configuration.max_monitoring_percent()
        by_definition: dict[str, list[NodeSummary]] = {}
        for node in nodes:
            by_definition.setdefault(node.definition_id, []).append(node.summary())
        placed: list[str] = []
        for node in waiting:
            peers = by_definition[node.definition_id]
            if monitoring_hold_allowed(peers, str(node.id), percent)[0]:
                done = self.roving.retry_refused_holds(node.id, peers, now)
                log.info("refused_alerts.placed", node=node.name, holds=done)
                placed += done
                if done:  # this node now counts as held for the next candidate of its definition
                    by_definition[node.definition_id] = [
                        NodeSummary(id=p.id, monitoring_held=True) if p.id == str(node.id) else p for p in peers]
        return placed

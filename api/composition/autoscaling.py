"""The autoscaler's loop: every few seconds, each endpoint's traffic through the proxy is sampled and the rule
(domain.autoscale) decides its pool's size; a step is committed as `scale_service` (a ServiceScaled event).

It runs in the process that serves the proxy, since that is where the traffic is counted. A decision made on a
stale view is dropped by the command and the next tick decides again. A pool that may scale to zero is woken by
the proxy (api.http.wake): the first request while no replica runs asks for one.

A pool whose rule has query metrics asks Prometheus (`queries`, adapters.prometheus_query) each tick, with the
workflow's and the service's matchers Roving renders in (domain.promql); a query that fails leaves the pool as it
is, logged as `autoscaler.query_failed` with the reason once per change of reason, not every tick."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import structlog

from adapters.background import Background
from adapters.prometheus_query import PrometheusQueries
from adapters.traffic import EndpointTraffic
from api.http.wake import pool_of
from domain.app import Conflict, NotFound
from domain.autoscale import QueryResult, decide_scale, query_samples, traffic_samples
from domain.promql import QueryError, parse_query

log = structlog.get_logger("roving.autoscaler")
DEFAULT_INTERVAL = 2.0


class AutoscalerLoop:
    def __init__(self, roving: Any, views: Any, traffic: EndpointTraffic, interval: float = DEFAULT_INTERVAL,
                 queries: PrometheusQueries | None = None) -> None:
        self.roving, self.views, self.traffic, self.interval = roving, views, traffic, interval
        self.queries = queries or PrometheusQueries(lambda: "")
        self._stays: dict[tuple[str, str], str] = {}  # (workflow, service) -> why its queries last failed
        self.background = Background(self._run, "roving-autoscaler")
        self.stopping = self.background.stopping

    def start(self) -> AutoscalerLoop:
        self.background.start()
        return self

    def stop(self) -> None:
        self.background.stop()

    def _run(self) -> None:
        while not self.stopping.wait(self.interval):
            try:
                self.tick(datetime.now(UTC))
            except Exception:  # noqa: BLE001 - one bad pass must not end autoscaling; the next tick tries again
                log.exception("autoscaler.tick_failed")

    def tick(self, now: datetime) -> int:
        """One evaluation of every bound endpoint's pool; returns how many pools scaled."""
        scaled = 0
        for name, workflow_id, service in self._bound_endpoints():
            sample = self.traffic.sample(name)
            pool = self._pool(workflow_id, service)
            if pool is None:
                continue
            metrics = traffic_samples(pool.rule, sample.as_metrics() if sample is not None else None)
            queried, why = query_samples(pool.rule, self._query(workflow_id, service, pool.rule), pool.size)
            if self._stay(workflow_id, service, why):
                continue
            step = decide_scale(pool.rule, metrics | queried, pool.size, pool.scaled_at, now)
            if step is not None and self._scale(workflow_id, service, pool.size, step.to, step.reason, now):
                scaled += 1
        return scaled

    def _query(self, workflow_id: Any, service: str, rule: Any) -> dict[str, QueryResult]:
        results: dict[str, QueryResult] = {}
        for metric in rule.metrics:
            if metric.query is None:
                continue
            try:
                results[metric.name] = self.queries.instant(parse_query(metric.query).render(str(workflow_id), service))
            except QueryError as error:
                results[metric.name] = str(error)
                break  # one failure already keeps the pool as it is
        return results

    def _stay(self, workflow_id: Any, service: str, why: str) -> bool:
        key = (str(workflow_id), service)
        if not why:
            self._stays.pop(key, None)
            return False
        if self._stays.get(key) != why:
            log.warning("autoscaler.query_failed", workflow=key[0], service=service, reason=why)
            self._stays[key] = why
        return True

    def _pool(self, workflow_id: Any, service: str) -> Any:
        return pool_of(self.views, workflow_id, service)

    def _bound_endpoints(self) -> list[tuple[str, Any, str]]:
        view = self.views.endpoints
        with view.lock:
            endpoints = [e for e in view.mirror.values() if not e.deleted and e.binding is not None]
            return [(e.name, e.binding.workflow_id, e.binding.service) for e in endpoints]

    def _scale(self, workflow_id: Any, service: str, size: int, to: int, reason: str, now: datetime) -> bool:
        try:
            done = self.roving.scale_service(workflow_id, service, size, to, reason, now)
        except (Conflict, NotFound) as error:
            log.info("autoscaler.step_refused", workflow=str(workflow_id), service=service, reason=str(error))
            return False
        if done:
            log.info("autoscaler.scaled", workflow=str(workflow_id), service=service, size=size, to=to, reason=reason)
        return bool(done)

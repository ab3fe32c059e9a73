"""The autoscaler's rule, pure: from a pool's metric samples, its size and when it last scaled, the size it should be.

Each metric asks for the replicas that would bring it to its target per replica (Kubernetes' horizontal rule:
ceil(total / target)); the pool takes the largest ask, within its bounds. A ratio within TOLERANCE of the target
asks for no change, so noise does not flap the pool, and after a step none follows until the cooldown has passed.

A pool with query metrics (domain.promql) is decided only when every query answered a number: a failed query, or
one no series matched, leaves the pool as it is, never read as "no load" (which would scale it down, or to zero)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from domain.fuzzfile.autoscaler import cooldown_seconds, pool_bounds
from domain.fuzzfile.blocks import ScalingMetric
from domain.fuzzfile.schema import Service
from domain.promql import parse_query

TOLERANCE = 0.1


@dataclass(frozen=True)
class PoolRule:
    """An autoscaled pool's bounds, metrics and cooldown (domain.fuzzfile.autoscaler reads them off the Fuzzfile)."""

    low: int
    high: int
    metrics: tuple[ScalingMetric, ...]
    cooldown: float


def pool_rule(service: Service) -> PoolRule | None:
    """The rule of an autoscaled service (checked at submission); None without an autoscaler."""
    bounds = pool_bounds(service)
    if bounds is None or service.autoscaler is None:
        return None
    scaler = service.autoscaler
    return PoolRule(bounds[0], bounds[1], tuple(scaler.metrics or ()), cooldown_seconds(scaler))


@dataclass(frozen=True)
class Pool:
    """An autoscaled service of a running workflow, as the autoscaler sees it."""

    service: str
    size: int
    rule: PoolRule
    scaled_at: datetime | None


@dataclass(frozen=True)
class ScaleStep:
    to: int
    reason: str


def decide_scale(rule: PoolRule, samples: Mapping[str, float], size: int, last_scaled: datetime | None,
                 now: datetime) -> ScaleStep | None:
    """`samples`: each metric's total over the pool (e.g. 5 requests in flight across it). None: stay."""
    if last_scaled is not None and (now - last_scaled).total_seconds() < rule.cooldown:
        return None
    asks = [(_ask(metric, samples[metric.name], size), metric) for metric in rule.metrics if metric.name in samples]
    if not asks:
        return None
    wanted, why = max(asks, key=lambda ask: ask[0])
    target = min(max(wanted, rule.low), rule.high)
    if target == size:
        return None
    per_replica = samples[why.name] / max(size, 1)
    return ScaleStep(target, f"{why.name} {per_replica:.2f} per replica, target {why.target:g}")


def _ask(metric: ScalingMetric, total: float, size: int) -> int:
    ratio = total / (max(size, 1) * metric.target)
    if abs(ratio - 1) <= TOLERANCE:
        return size
    return math.ceil(total / metric.target - 1e-9)


QueryResult = float | None | str  # a query's value, None when no series matched, or why it failed


def query_samples(rule: PoolRule, results: Mapping[str, QueryResult], size: int) -> tuple[dict[str, float], str]:
    """The pool totals of the rule's query metrics from their results, or ({}, why the pool must stay as it is)."""
    samples = {}
    for metric in rule.metrics:
        if metric.query is None:
            continue
        result = results.get(metric.name)
        if isinstance(result, str):
            return {}, f"query metric {metric.name} failed: {result}"
        if result is None:
            return {}, f"query metric {metric.name}: no series of the service's replicas matched"
        samples[metric.name] = parse_query(metric.query).total(result, size)
    return samples, ""


def traffic_samples(rule: PoolRule, measured: Mapping[str, float] | None) -> dict[str, float]:
    """The endpoint-measured metrics; with no traffic sample yet, none arrived: 0 (query metrics are not theirs)."""
    if measured is not None:
        return dict(measured)
    return {m.name: 0.0 for m in rule.metrics if m.query is None}

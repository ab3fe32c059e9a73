"""Scaling on query metrics, pure: a pool moves on every query's number, and stays as it is when any failed."""

from __future__ import annotations

from datetime import UTC, datetime

from domain.autoscale import PoolRule, decide_scale, query_samples, traffic_samples
from domain.fuzzfile.blocks import ScalingMetric

NOW = datetime(2026, 1, 1, tzinfo=UTC)
QUEUE = ScalingMetric(name="queue", target=10, query="sum(queue_depth)")
BUSY = ScalingMetric(name="busy", target=2, query="avg(busy_workers)")
TO_ZERO = PoolRule(low=0, high=5, metrics=(QUEUE,), cooldown=0)


def decide(rule: PoolRule, results: dict, size: int, traffic: dict | None = None):
    samples, why = query_samples(rule, results, size)
    if why:
        return why
    return decide_scale(rule, traffic_samples(rule, traffic) | samples, size, None, NOW)


def test_a_query_total_over_the_target_grows_the_pool_and_naming_the_metric():
    step = decide(TO_ZERO, {"queue": 35.0}, size=1)
    assert step.to == 4 and step.reason == "queue 35.00 per replica, target 10"


def test_a_query_answering_zero_scales_a_pool_that_may_to_zero():
    assert decide(TO_ZERO, {"queue": 0.0}, size=2).to == 0


def test_a_failed_query_leaves_the_pool_as_it_is_and_says_why():
    assert decide(TO_ZERO, {"queue": "Prometheus at http://127.0.0.1:1 did not answer"}, size=3) == (
        "query metric queue failed: Prometheus at http://127.0.0.1:1 did not answer")


def test_a_query_no_series_matched_is_no_evidence_of_idleness():
    assert decide(TO_ZERO, {"queue": None}, size=3) == (
        "query metric queue: no series of the service's replicas matched")
    assert decide(TO_ZERO, {}, size=3).startswith("query metric queue")


def test_an_average_is_per_replica_so_the_pool_grows_by_its_ratio_to_the_target():
    rule = PoolRule(low=1, high=8, metrics=(BUSY,), cooldown=0)
    assert decide(rule, {"busy": 4.0}, size=2).to == 4  # 2 replicas at 4 busy each: 8 in all, 2 per replica


def test_with_no_traffic_yet_only_the_endpoint_metrics_read_zero_not_the_queries():
    rule = PoolRule(low=0, high=4, metrics=(ScalingMetric(name="in-flight-requests", target=1), QUEUE), cooldown=0)
    assert traffic_samples(rule, None) == {"in-flight-requests": 0.0}
    assert decide(rule, {"queue": 25.0}, size=1).to == 3  # the query's ask wins over an idle endpoint's
    assert decide(rule, {"queue": "timed out"}, size=1) == "query metric queue failed: timed out"

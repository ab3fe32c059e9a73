"""The autoscaler's rule: metric samples, the pool's size and its last step in, the size it should be out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from domain.autoscale import PoolRule, decide_scale
from domain.fuzzfile.blocks import ScalingMetric

NOW = datetime(2026, 1, 1, tzinfo=UTC)
IN_FLIGHT = PoolRule(low=1, high=4, metrics=(ScalingMetric(name="in-flight-requests", target=2),), cooldown=30)


def test_a_pool_over_its_target_grows_to_bring_each_replica_back_to_it():
    step = decide_scale(IN_FLIGHT, {"in-flight-requests": 5.0}, size=1, last_scaled=None, now=NOW)
    assert step is not None and step.to == 3
    assert step.reason == "in-flight-requests 5.00 per replica, target 2"


def test_growth_stops_at_max_replicas_and_shrinking_at_min_replicas():
    assert decide_scale(IN_FLIGHT, {"in-flight-requests": 40.0}, 2, None, NOW).to == 4
    assert decide_scale(IN_FLIGHT, {"in-flight-requests": 0.0}, 3, None, NOW).to == 1
    assert decide_scale(IN_FLIGHT, {"in-flight-requests": 0.0}, 1, None, NOW) is None


def test_no_step_follows_another_within_the_cooldown():
    busy = {"in-flight-requests": 8.0}
    assert decide_scale(IN_FLIGHT, busy, 2, last_scaled=NOW - timedelta(seconds=29), now=NOW) is None
    assert decide_scale(IN_FLIGHT, busy, 2, last_scaled=NOW - timedelta(seconds=30), now=NOW).to == 4


def test_a_load_within_a_tenth_of_the_target_keeps_the_pool_as_it_is():
    assert decide_scale(IN_FLIGHT, {"in-flight-requests": 4.3}, 2, None, NOW) is None
    assert decide_scale(IN_FLIGHT, {"in-flight-requests": 5.0}, 2, None, NOW).to == 3


def test_the_metric_asking_for_the_most_replicas_wins_and_an_unmeasured_one_asks_nothing():
    both = PoolRule(1, 10, (ScalingMetric(name="in-flight-requests", target=2),
                            ScalingMetric(name="requests-per-second", target=10)), cooldown=0)
    step = decide_scale(both, {"in-flight-requests": 2.0, "requests-per-second": 55.0}, 1, None, NOW)
    assert step.to == 6 and step.reason.startswith("requests-per-second 55.00 per replica")
    assert decide_scale(both, {}, 1, None, NOW) is None


def test_a_pool_that_may_scale_to_zero_goes_to_zero_when_nobody_calls_and_starts_with_one():
    from domain.fuzzfile import parse_fuzzfile
    from domain.fuzzfile.autoscaler import initial_size

    idle = PoolRule(low=0, high=3, metrics=(ScalingMetric(name="in-flight-requests", target=2),), cooldown=30)
    step = decide_scale(idle, {"in-flight-requests": 0.0}, 1, None, NOW)
    assert step is not None and step.to == 0
    assert decide_scale(idle, {"in-flight-requests": 0.0}, 0, None, NOW) is None  # at zero it stays
    text = ("version: v4\nservices:\n  web:\n    image: {uri: docker://nginx}\n    script: nginx\n"
            "    network:\n      ports: [{name: http, port: 8000}]\n"
            "      endpoints: [{name: web, port-name: http, persistent: true}]\n"
            "    autoscaler: {min-replicas: 0, max-replicas: 2, metrics: [{name: in-flight-requests, target: 1}]}\n")
    assert initial_size(parse_fuzzfile(text).definition.services["web"]) == 1

"""The autoscaler's tick: each bound endpoint's traffic sample decides its pool's size through the command."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from uuid import uuid4

from adapters.traffic import EndpointTraffic
from api.composition.autoscaling import AutoscalerLoop
from domain.autoscale import Pool, PoolRule
from domain.fuzzfile.blocks import ScalingMetric

NOW = datetime(2026, 1, 1, tzinfo=UTC)
RULE = PoolRule(1, 3, (ScalingMetric(name="in-flight-requests", target=1),), cooldown=10)


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def views(workflow_id, pool: Pool):
    endpoint = SimpleNamespace(name="llm", deleted=False, binding=SimpleNamespace(workflow_id=workflow_id, service="web"))
    workflow = SimpleNamespace(pools=lambda: [pool])
    return SimpleNamespace(
        endpoints=SimpleNamespace(lock=threading.RLock(), mirror=SimpleNamespace(values=lambda: [endpoint])),
        workflows=SimpleNamespace(lock=threading.RLock(), workflow=lambda wid: workflow if wid == workflow_id else None))


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def scale_service(self, *args) -> bool:
        self.calls.append(args)
        return True


def test_three_requests_in_flight_grow_a_one_replica_pool_to_three():
    clock, wid, roving = Clock(), uuid4(), Recorder()
    traffic = EndpointTraffic(clock=clock)
    for _ in range(3):
        traffic.begin("llm")
    clock.now = 2.0
    loop = AutoscalerLoop(roving, views(wid, Pool("web", 1, RULE, None)), traffic)
    assert loop.tick(NOW) == 1
    assert roving.calls == [(wid, "web", 1, 3, "in-flight-requests 3.00 per replica, target 1", NOW)]


def test_an_endpoint_nobody_calls_shrinks_its_pool_to_min_once_the_cooldown_is_over():
    wid, roving = uuid4(), Recorder()
    recent = AutoscalerLoop(roving, views(wid, Pool("web", 3, RULE, NOW - timedelta(seconds=5))), EndpointTraffic())
    assert recent.tick(NOW) == 0
    later = AutoscalerLoop(roving, views(wid, Pool("web", 3, RULE, NOW - timedelta(seconds=10))), EndpointTraffic())
    assert later.tick(NOW) == 1 and roving.calls[0][2:4] == (3, 1)

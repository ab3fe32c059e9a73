"""The autoscaler's command on the app: growing a pool requests allocations for its new replicas, shrinking cancels
the highest-numbered one's allocation and takes it out of the endpoint, and a decision made on a stale size is
dropped."""

from __future__ import annotations

from uuid import uuid4

import pytest

from domain.app.ids import allocation_id, endpoint_id
from tests.unit.app.builders import T0, app, later, user

POOL = """
version: v4
services:
  model:
    image: {uri: docker://alpine}
    script: serve
    network:
      ports: [{name: http, port: 8000}]
      endpoints: [{name: llm, port-name: http, persistent: true, scope: user}]
    autoscaler: {min-replicas: 1, max-replicas: 2, cooldown: 5s, metrics: [{name: in-flight-requests, target: 1}]}
jobs:
  client:
    image: {uri: docker://alpine}
    script: query
    depends-on: [{name: model, status: RUNNING}]
"""


@pytest.fixture
def pool():
    roving, alice = app(), user()
    roving.create_endpoint("llm", "user", "user", alice, T0)
    node, _ = roving.register_node("n1", 8, 8 << 30, {}, {}, "pool", "127.0.0.1", 9100, T0)
    wid = uuid4()
    roving.submit_workflow(wid, "w", POOL, 0, None, alice, T0)
    return roving, node, wid


def serve(roving, node, wid, stage, attempt, at):
    aid = allocation_id(wid, stage, attempt)
    fence = roving.place(aid, [node], "scheduler", at)
    roving.report(node, aid, fence, "ready", None, "", at)
    return aid


def test_a_pool_grows_to_two_replicas_behind_its_endpoint_and_shrinks_back_cleanly(pool):
    roving, node, wid = pool
    first = serve(roving, node, wid, "model[1]", 1, later(1))
    assert roving.scale_service(wid, "model", 1, 2, "in-flight-requests 2.00 per replica, target 1", later(2))
    second = serve(roving, node, wid, "model[2]", 1, later(3))
    llm = roving.repository.get(endpoint_id("llm"))
    assert llm.serving_targets() == ["127.0.0.1:8000", "127.0.0.1:8001"]

    assert roving.scale_service(wid, "model", 2, 1, "in-flight-requests 0.00 per replica, target 1", later(10))
    stopped, workflow = roving.repository.get(second), roving.repository.get(wid)
    assert (stopped.state.value, stopped.reason) == ("CANCELED", "scaled down: in-flight-requests 0.00 per replica, target 1")
    assert workflow.stage("model[2]").status.value == "PENDING" and workflow.status == "STARTED"
    assert roving.repository.get(endpoint_id("llm")).serving_targets() == ["127.0.0.1:8000"]
    assert not roving.repository.get(first).ended


def test_a_decision_made_on_a_size_the_pool_has_left_is_dropped(pool):
    roving, node, wid = pool
    serve(roving, node, wid, "model[1]", 1, later(1))
    assert roving.scale_service(wid, "model", 1, 2, "busy", later(2))
    assert not roving.scale_service(wid, "model", 1, 2, "busy (a second look at the old size)", later(2))
    assert roving.repository.get(wid).pools()[0].size == 2


def test_scaling_past_the_bounds_is_a_conflict_naming_them(pool):
    from domain.app.errors import Conflict

    roving, node, wid = pool
    with pytest.raises(Conflict, match="between 1 and 2"):
        roving.scale_service(wid, "model", 1, 3, "busy", later(2))

"""A ready service whose readiness probe fails leaves its endpoint without being killed and comes back when it passes;
`replicas: N` serves N stages through one endpoint."""

from __future__ import annotations

from uuid import uuid4

import pytest

from domain.app.ids import allocation_id, endpoint_id
from domain.endpoint import Endpoint
from domain.workflow import Workflow
from tests.unit.app.builders import T0, app, later, user

PROBE_FAILED = "readiness probe failed 3 times: HTTP 503 from /healthz"


def served(replicas: int = 1) -> str:
    return f"""
version: v4
services:
  model:
    image: {{uri: docker://alpine}}
    script: serve
    replicas: {replicas}
    network:
      ports: [{{name: http, port: 8000}}]
      endpoints: [{{name: llm, port-name: http, persistent: true, scope: user}}]
jobs:
  client:
    image: {{uri: docker://alpine}}
    script: query
    depends-on: [{{name: model, status: RUNNING}}]
"""


@pytest.fixture
def setup():
    roving, alice = app(), user()
    roving.create_endpoint("llm", "user", "user", alice, T0)
    node, _ = roving.register_node("n1", 8, 8 << 30, {}, {}, "pool", "127.0.0.1", 9100, T0)
    return roving, alice, node


def run(roving, node, wid, stage, at):
    aid = allocation_id(wid, stage, 1)
    return aid, roving.place(aid, [node], "scheduler", at)


def endpoint(roving) -> Endpoint:
    return roving.repository.get(endpoint_id("llm"))


def test_a_service_killed_by_its_probe_before_its_first_readiness_names_it_in_its_endpoint(setup):
    roving, alice, node = setup
    wid = uuid4()
    roving.submit_workflow(wid, "w", served(), 0, None, alice, T0)
    aid, fence = run(roving, node, wid, "model", later(1))
    roving.report(node, aid, fence, "exited", 143, PROBE_FAILED, later(30))
    stage = roving.repository.get(wid).stage("model")
    assert (stage.status.value, stage.reason) == ("FAILED", f"Failed: {PROBE_FAILED} (exit 143)")
    assert PROBE_FAILED in endpoint(roving).not_serving_reason()


def test_a_ready_service_whose_probe_fails_leaves_its_endpoint_running_and_comes_back(setup):
    roving, alice, node = setup
    wid = uuid4()
    roving.submit_workflow(wid, "w", served(), 0, None, alice, T0)
    aid, fence = run(roving, node, wid, "model", later(1))
    roving.report(node, aid, fence, "ready", None, "", later(2))
    assert endpoint(roving).serving_targets() == ["127.0.0.1:8000"]

    roving.report(node, aid, fence, "unready", None, PROBE_FAILED, later(3))
    roving.report(node, aid, fence, "unready", None, PROBE_FAILED, later(4))  # a retried report: no news
    stage, ep = roving.repository.get(wid).stage("model"), endpoint(roving)
    assert (stage.status.value, stage.reason) == ("RUNNING", f"Unready: {PROBE_FAILED}")
    assert ep.serving_target() is None and PROBE_FAILED in ep.not_serving_reason()
    assert not roving.repository.get(aid).ended  # not killed
    assert roving.repository.get(allocation_id(wid, "client", 1)) is not None  # its dependent still went

    roving.report(node, aid, fence, "ready", None, "", later(5))
    stage, ep = roving.repository.get(wid).stage("model"), endpoint(roving)
    assert (stage.status.value, stage.reason) == ("RUNNING", "")
    assert ep.serving_targets() == ["127.0.0.1:8000"] and ep.not_serving_reason() == ""


def test_a_replica_pool_of_two_serves_through_one_endpoint(setup):
    roving, alice, node = setup
    wid = uuid4()
    roving.submit_workflow(wid, "w", served(replicas=2), 0, None, alice, T0)
    workflow: Workflow = roving.repository.get(wid)
    specs = {name: workflow.stages[name].spec for name in ("model[1]", "model[2]")}
    assert [(s.env["FB_TASK_ID"], s.env["FB_PORT_HTTP"]) for s in specs.values()] == [("1", "8000"), ("2", "8001")]
    placed = {stage: run(roving, node, wid, stage, later(1)) for stage in specs}
    for aid, fence in placed.values():
        roving.report(node, aid, fence, "ready", None, "", later(2))
    assert endpoint(roving).serving_targets() == ["127.0.0.1:8000", "127.0.0.1:8001"]
    assert roving.repository.get(wid).stage("model[2]").status.value == "RUNNING"

    aid, fence = placed["model[1]"]
    roving.report(node, aid, fence, "unready", None, PROBE_FAILED, later(3))
    assert endpoint(roving).serving_targets() == ["127.0.0.1:8001"]  # the other replica serves alone

    aid, fence = placed["model[2]"]
    roving.report(node, aid, fence, "exited", 1, "exited with code 1", later(4))
    ep = endpoint(roving)
    assert ep.binding is not None and ep.serving_targets() == []  # still bound: replica 1 runs, unready
    assert "model[1]" in ep.not_serving_reason() and "model[2]" in ep.not_serving_reason()


RESTARTED = """
version: v4
services:
  model:
    image: {uri: docker://alpine}
    script: serve
    replicas: REPLICAS
    policy: {restart: on-failure}
    network:
      ports: [{name: http, port: 8000}]
      endpoints: [{name: llm, port-name: http, persistent: true, scope: user}]
"""


def test_a_restarted_service_leaves_its_endpoint_and_serves_it_again_once_ready(setup):
    roving, alice, node = setup
    wid = uuid4()
    roving.submit_workflow(wid, "w", RESTARTED.replace("REPLICAS", "1"), 0, None, alice, T0)
    aid, fence = run(roving, node, wid, "model", later(1))
    roving.report(node, aid, fence, "ready", None, "", later(2))
    roving.report(node, aid, fence, "exited", 1, "exited with code 1", later(3))
    assert "restarting after: service exited with code 1" in endpoint(roving).not_serving_reason()
    again = allocation_id(wid, "model", 2)
    roving.report(node, again, roving.place(again, [node], "scheduler", later(4)), "ready", None, "", later(5))
    assert endpoint(roving).serving_targets() == ["127.0.0.1:8000"]


def test_a_replica_on_a_lost_node_leaves_the_endpoint_while_the_others_serve(setup):
    roving, alice, node = setup
    other, _ = roving.register_node("n2", 8, 8 << 30, {}, {}, "pool", "127.0.0.1", 9100, T0)
    wid = uuid4()
    roving.submit_workflow(wid, "w", RESTARTED.replace("REPLICAS", "2"), 0, None, alice, T0)
    for stage, where in (("model[1]", node), ("model[2]", other)):
        aid, fence = run(roving, where, wid, stage, later(1))
        roving.report(where, aid, fence, "ready", None, "", later(2))
    roving.node_lost(other, later(30))
    assert endpoint(roving).serving_targets() == ["127.0.0.1:8000"]
    assert endpoint(roving).unready == {"model[2]": "restarting after: node n2 lost (lease lapsed)"}

"""Endpoint commands: create and delete, binding on submission, takeover on readiness, failed takeovers."""

from __future__ import annotations

from uuid import uuid4

import pytest

from domain.app.endpoints import endpoint_env, persistent_endpoints
from domain.app.errors import Conflict, Invalid, NotFound
from domain.app.ids import allocation_id, endpoint_id
from domain.endpoint import Endpoint
from domain.fuzzfile import parse_fuzzfile
from domain.workflow import Workflow
from tests.unit.app.builders import T0, app, later, user


def served(port: int, persistent: bool = True, annotations: str = "") -> str:
    return f"""
version: v4
{annotations}
services:
  model:
    image: {{uri: docker://alpine}}
    script: python3 -m http.server {port}
    network:
      ports: [{{name: http, port: {port}}}]
      endpoints: [{{name: llm, port-name: http, persistent: {str(persistent).lower()}, scope: user}}]
jobs:
  client:
    image: {{uri: docker://alpine}}
    script: curl $FB_SERVICE_MODEL_ENDPOINT_URL
    depends-on: [{{name: model, status: RUNNING}}]
"""


def register(roving, name="node-1"):
    return roving.register_node(name, 4, 8 << 30, {}, {}, "pool-a", "127.0.0.1", 9100, T0)[0]


def start(roving, node, workflow_id, at):
    alloc = allocation_id(workflow_id, "model", 1)
    return alloc, roving.place(alloc, [node], "scheduler", at)


def endpoint(roving) -> Endpoint:
    return roving.repository.get(endpoint_id("llm"))


@pytest.fixture
def setup():
    roving, alice = app(), user()
    roving.create_endpoint("llm", "user", "user", alice, T0)
    return roving, alice, register(roving)


def test_creating_an_endpoint_twice_is_a_conflict(setup):
    roving, alice, _ = setup
    with pytest.raises(Conflict):
        roving.create_endpoint("llm", "user", "user", alice, T0)


def test_a_bad_endpoint_name_is_refused_saying_which_characters():
    with pytest.raises(Invalid, match="'L'"):
        app().create_endpoint("Llm", "user", "user", user(), T0)


def test_someone_else_cannot_delete_an_endpoint(setup):
    roving, _, _ = setup
    with pytest.raises(NotFound):
        roving.delete_endpoint(endpoint_id("llm"), user(name="mallory"), later(1))


def test_submitting_claims_the_persistent_endpoint_pending_readiness(setup):
    roving, alice, _ = setup
    wf = uuid4()
    roving.submit_workflow(wf, "serve", served(8001), 0, None, alice, T0)
    assert endpoint(roving).pending.workflow_id == wf
    assert "waiting for workflow" in endpoint(roving).not_serving_reason()


def test_a_service_naming_an_unknown_endpoint_is_refused_at_submission():
    with pytest.raises(Invalid, match="no persistent endpoint named 'llm'"):
        app().submit_workflow(uuid4(), "serve", served(8001), 0, None, user(), T0)


def test_the_ready_report_binds_the_endpoint_to_the_service_port(setup):
    roving, alice, node = setup
    wf = uuid4()
    roving.submit_workflow(wf, "serve", served(8001), 0, None, alice, T0)
    alloc, fence = start(roving, node, wf, later(1))
    roving.report(node, alloc, fence, "ready", None, "", later(2))
    binding = endpoint(roving).serving_target()
    assert (binding.workflow_id, binding.host, binding.port) == (wf, "127.0.0.1", 8001)


def test_a_takeover_with_ready_keeps_the_old_service_until_the_new_one_is_ready(setup):
    roving, alice, node = setup
    old, new = uuid4(), uuid4()
    roving.submit_workflow(old, "v1", served(8001), 0, None, alice, T0)
    roving.report(node, *start(roving, node, old, later(1)), "ready", None, "", later(2))
    roving.submit_workflow(new, "v2", served(8002), 0, None, alice, later(3))
    assert endpoint(roving).serving_target().workflow_id == old
    roving.report(node, *start(roving, node, new, later(4)), "ready", None, "", later(5))
    assert endpoint(roving).serving_target().port == 8002
    assert roving.repository.get(old).status == "CANCELED"


def test_a_takeover_with_start_cancels_the_old_workflow_at_submission(setup):
    roving, alice, node = setup
    old, new = uuid4(), uuid4()
    roving.submit_workflow(old, "v1", served(8001), 0, None, alice, T0)
    roving.report(node, *start(roving, node, old, later(1)), "ready", None, "", later(2))
    roving.submit_workflow(new, "v2", served(8002), 0, None, alice, later(3), endpoint_strategy="start")
    assert roving.repository.get(old).status == "CANCELED"
    assert endpoint(roving).serving_target() is None


def test_the_strategy_annotation_chooses_start(setup):
    roving, alice, node = setup
    old, new = uuid4(), uuid4()
    roving.submit_workflow(old, "v1", served(8001), 0, None, alice, T0)
    roving.report(node, *start(roving, node, old, later(1)), "ready", None, "", later(2))
    annotated = served(8002, annotations="annotations: {roving.endpoint-strategy: start}")
    roving.submit_workflow(new, "v2", annotated, 0, None, alice, later(3))
    assert roving.repository.get(old).status == "CANCELED"


def test_a_new_service_that_exits_before_ready_leaves_the_old_binding_serving_with_the_reason(setup):
    roving, alice, node = setup
    old, new = uuid4(), uuid4()
    roving.submit_workflow(old, "v1", served(8001), 0, None, alice, T0)
    roving.report(node, *start(roving, node, old, later(1)), "ready", None, "", later(2))
    roving.submit_workflow(new, "v2", served(8002), 0, None, alice, later(3))
    roving.report(node, *start(roving, node, new, later(4)), "exited", 1, "", later(5))
    found = endpoint(roving)
    assert found.serving_target().workflow_id == old
    assert "never became ready: service exited with code 1" in found.last_failure
    assert roving.repository.get(old).status != "CANCELED"


def test_a_bound_service_that_exits_unbinds_with_the_reason(setup):
    roving, alice, node = setup
    wf = uuid4()
    roving.submit_workflow(wf, "serve", served(8001), 0, None, alice, T0)
    alloc, fence = start(roving, node, wf, later(1))
    roving.report(node, alloc, fence, "ready", None, "", later(2))
    roving.report(node, alloc, fence, "exited", 137, "", later(3))
    assert "exited with code 137" in endpoint(roving).not_serving_reason()


def test_stopping_the_bound_workflow_unbinds_so_callers_get_a_503_with_the_reason(setup):
    roving, alice, node = setup
    wf = uuid4()
    roving.submit_workflow(wf, "serve", served(8001), 0, None, alice, T0)
    alloc, fence = start(roving, node, wf, later(1))
    roving.report(node, alloc, fence, "ready", None, "", later(2))
    roving.stop_workflow(wf, alice, later(3))
    assert endpoint(roving).serving_target() is None
    assert "stopped by alice" in endpoint(roving).not_serving_reason()


def test_jobs_and_services_get_the_endpoint_url_and_path(setup):
    roving, alice, _ = setup
    wf = uuid4()
    roving.submit_workflow(wf, "serve", served(8001), 0, None, alice, T0)
    env = roving.repository.get(wf).stages["client"].spec.env
    assert env["FB_SERVICE_MODEL_ENDPOINT_PATH"] == "/endpoints/llm/"
    assert env["FB_SERVICE_MODEL_ENDPOINT_URL"].endswith("/endpoints/llm/")


def test_non_persistent_endpoints_get_no_binding_and_no_variables():
    definition = parse_fuzzfile(served(8001, persistent=False)).definition
    assert persistent_endpoints(definition) == []
    assert endpoint_env(definition, "http://x") == {}


def test_deleting_an_endpoint_says_so_to_callers(setup):
    roving, alice, _ = setup
    roving.delete_endpoint(endpoint_id("llm"), alice, later(1))
    assert endpoint(roving).not_serving_reason() == "endpoint llm was deleted"
    assert isinstance(roving.repository.get(endpoint_id("llm")), Endpoint)
    assert not isinstance(roving.repository.get(endpoint_id("llm")), Workflow)


def test_the_endpoint_targets_the_services_own_node_and_reaches_only_a_port_the_service_bound(setup):
    roving, alice, _ = setup
    far = roving.register_node("node-far", 4, 8 << 30, {}, {}, "pool-a", "10.1.2.3", 9100, T0)[0]
    wf = uuid4()
    roving.submit_workflow(wf, "serve", served(8001), 0, None, alice, T0)
    alloc, fence = start(roving, far, wf, later(1))
    roving.report(far, alloc, fence, "ready", None, "", later(2), listening=(8001, 9090))
    found = endpoint(roving)
    assert found.reachable_targets() == ["10.1.2.3:8001"] and found.unreachable_reason() == ""


def test_a_declared_port_the_service_does_not_listen_on_is_never_reached_and_says_why(setup):
    roving, alice, node = setup
    wf = uuid4()
    roving.submit_workflow(wf, "serve", served(8080), 0, None, alice, T0)  # 8080: someone else's (the API, say)
    alloc, fence = start(roving, node, wf, later(1))
    roving.report(node, alloc, fence, "ready", None, "", later(2), listening=(9000,))
    found = endpoint(roving)
    assert found.serving_targets() == ["127.0.0.1:8080"]  # ready: its dependents may go on
    assert found.reachable_targets() == []
    assert "does not listen on port 8080 of its node (its processes listen on 9000)" in found.unreachable_reason()


def test_readiness_that_names_no_ports_is_not_trusted(setup):
    roving, alice, node = setup
    wf = uuid4()
    roving.submit_workflow(wf, "serve", served(8001), 0, None, alice, T0)
    alloc, fence = start(roving, node, wf, later(1))
    roving.report(node, alloc, fence, "ready", None, "", later(2))  # an older agent: no `listening`
    assert endpoint(roving).reachable_targets() == []
    assert "did not say which ports" in endpoint(roving).unreachable_reason()


def test_a_service_that_opens_its_port_late_becomes_reachable_and_one_that_gives_it_up_does_not(setup):
    roving, alice, node = setup
    wf = uuid4()
    roving.submit_workflow(wf, "serve", served(8001), 0, None, alice, T0)
    alloc, fence = start(roving, node, wf, later(1))
    roving.report(node, alloc, fence, "ready", None, "", later(2), listening=())
    assert endpoint(roving).reachable_targets() == []
    roving.report(node, alloc, fence, "ready", None, "", later(3), listening=(8001,))
    assert endpoint(roving).reachable_targets() == ["127.0.0.1:8001"]
    version = endpoint(roving).version
    roving.report(node, alloc, fence, "ready", None, "", later(4), listening=(8001,))
    assert endpoint(roving).version == version  # the same news again changes nothing
    roving.report(node, alloc, fence, "ready", None, "", later(5), listening=())
    assert endpoint(roving).reachable_targets() == [] and "listen on no port" in endpoint(roving).unreachable_reason()

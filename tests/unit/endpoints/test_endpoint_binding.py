"""Given an endpoint, workflows bind it, take it over (ready or start) and a failed takeover keeps the old one serving."""

import pytest

from domain.endpoint_values import Decision, EndpointError
from tests.unit.endpoints.builders import NEW, OLD, OTHER, at, bound, endpoint


def names(ep) -> list[str]:
    return [type(e).__name__ for e in ep.collect_events()]


def test_a_new_endpoint_serves_nothing_and_says_why():
    ep = endpoint()
    assert ep.serving_target() is None
    assert ep.not_serving_reason() == "endpoint llm-chat has no ready service: no workflow has bound this endpoint yet"


def test_a_requested_binding_serves_once_its_service_is_ready():
    ep = endpoint()
    assert ep.request_binding(OLD, "vllm", by="alice", at=at(1)) == Decision()
    assert ep.serving_target() is None
    assert "waiting for workflow 00000000-0000-0000-0000-000000000001 service vllm" in ep.not_serving_reason()
    ep.service_ready(OLD, "vllm", "10.0.0.5", 8000, by="agent", at=at(2))
    target = ep.serving_target()
    assert (target.target, target.workflow_id, target.service, target.bound_at) == ("10.0.0.5:8000", OLD, "vllm", at(2))
    assert names(ep) == ["EndpointCreated", "BindingRequested", "EndpointBound"]


def test_a_ready_takeover_keeps_the_old_binding_serving_until_the_new_service_is_ready():
    ep = bound(OLD)
    assert ep.request_binding(NEW, "vllm", by="bob", at=at(3)) == Decision()
    assert ep.serving_target().workflow_id == OLD
    decision = ep.service_ready(NEW, "vllm", "10.0.0.9", 9000, by="agent", at=at(4))
    assert decision.cancel_workflow == OLD
    assert ep.serving_target().target == "10.0.0.9:9000"
    assert names(ep)[-3:] == ["TakeoverPending", "EndpointBound", "TakeoverCompleted"]


def test_a_start_takeover_cancels_the_old_workflow_at_submission():
    ep = bound(OLD)
    decision = ep.request_binding(NEW, "vllm", by="bob", at=at(3), strategy="start")
    assert decision.cancel_workflow == OLD
    assert ep.serving_target() is None
    assert ep.service_ready(NEW, "vllm", "10.0.0.9", 9000, by="agent", at=at(4)) == Decision()
    assert ep.serving_target().workflow_id == NEW
    assert names(ep)[-4:] == ["TakeoverPending", "EndpointUnbound", "EndpointBound", "TakeoverCompleted"]


def test_a_failed_takeover_keeps_the_old_binding_serving_with_the_reason():
    ep = bound(OLD)
    ep.request_binding(NEW, "vllm", by="bob", at=at(3))
    ep.service_stopped(NEW, "vllm", "readiness probe never passed", by="agent", at=at(9))
    assert ep.serving_target().workflow_id == OLD
    assert ep.last_failure == ("workflow 00000000-0000-0000-0000-000000000002 never became ready: "
                               "readiness probe never passed")
    assert ep.pending is None
    assert names(ep)[-1] == "TakeoverFailed"


def test_after_a_failed_takeover_another_workflow_may_try():
    ep = bound(OLD)
    ep.request_binding(NEW, "vllm", by="bob", at=at(3))
    ep.service_stopped(NEW, "vllm", "exit 1", by="agent", at=at(4))
    ep.request_binding(OTHER, "vllm", by="bob", at=at(5))
    assert ep.service_ready(OTHER, "vllm", "10.0.0.7", 80, by="agent", at=at(6)).cancel_workflow == OLD


def test_a_second_takeover_waits_for_the_first_to_finish():
    ep = bound(OLD)
    ep.request_binding(NEW, "vllm", by="bob", at=at(3))
    assert ep.request_binding(NEW, "vllm", by="bob", at=at(3)) == Decision()
    with pytest.raises(EndpointError, match="already has a pending takeover by workflow"):
        ep.request_binding(OTHER, "vllm", by="carol", at=at(4))


def test_when_the_bound_service_stops_the_endpoint_serves_nothing_and_says_why():
    ep = bound(OLD)
    ep.service_stopped(OLD, "vllm", "workflow canceled by alice", by="workflow", at=at(5))
    assert ep.serving_target() is None
    assert ep.not_serving_reason() == "endpoint llm-chat has no ready service: workflow canceled by alice"


def test_a_ready_report_for_a_service_that_did_not_ask_is_refused():
    with pytest.raises(EndpointError, match="no pending binding for workflow"):
        bound(OLD).service_ready(NEW, "vllm", "10.0.0.9", 9000, by="agent", at=at(4))


def test_a_ready_report_needs_a_usable_target():
    ep = endpoint()
    ep.request_binding(OLD, "vllm", by="alice", at=at(1))
    with pytest.raises(EndpointError, match="port 1-65535"):
        ep.service_ready(OLD, "vllm", "10.0.0.5", 0, by="agent", at=at(2))


def test_an_unknown_strategy_is_refused_with_the_choices():
    with pytest.raises(EndpointError, match=r"takeover strategy must be ready \| start \(got 'later'\)"):
        endpoint().request_binding(OLD, "vllm", by="alice", at=at(1), strategy="later")


def test_a_deleted_endpoint_serves_nothing_and_refuses_bindings():
    ep = bound(OLD)
    ep.delete(by="alice", at=at(5))
    assert ep.serving_target() is None and ep.not_serving_reason() == "endpoint llm-chat was deleted"
    with pytest.raises(EndpointError, match="was deleted"):
        ep.request_binding(NEW, "vllm", by="alice", at=at(6))

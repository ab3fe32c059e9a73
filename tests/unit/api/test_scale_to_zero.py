"""A pool with `min-replicas: 0` scales to zero and keeps its endpoint; the first request through the proxy wakes a
replica and waits for it (within ROVING_WAKE_TIMEOUT), else it is answered 503 with Retry-After."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import UTC, datetime
from uuid import UUID

import httpx
import msgspec
import pytest

from api.http import wake as wake_module
from domain.app import Conflict
from domain.app.ids import allocation_id, endpoint_id
from tests.unit.api.harness import Api
from tests.unit.api.test_endpoint_routes import service, through  # noqa: F401 - `service` is a fixture

NODE = "n1"


def pool(port: int) -> str:
    return f"""
version: v4
services:
  model:
    image: {{uri: docker://alpine}}
    script: serve
    network:
      ports: [{{name: http, port: {port}}}]
      endpoints: [{{name: llm, port-name: http, persistent: true}}]
    autoscaler: {{min-replicas: 0, max-replicas: 2, cooldown: 1h, metrics: [{{name: in-flight-requests, target: 1}}]}}
"""


def serve(api: Api, workflow: UUID, port: int, node: UUID) -> None:
    """The scheduler places the replica's current attempt and its agent reports it ready, listening on `port`."""
    roving, now = api.services.roving, datetime.now(UTC)
    attempt = roving.repository.get(workflow).stage("model[1]").attempt
    alloc = allocation_id(workflow, "model[1]", attempt)
    roving.report(node, alloc, roving.place(alloc, [node], "scheduler", now), "ready", None, "", now, listening=(port,))
    api.services.tailer.wait_for(roving.last_position)


def scaled_to_zero(port: int, wake_timeout: str) -> tuple[Api, str, UUID, UUID]:
    api = Api({"ROVING_WAKE_TIMEOUT": wake_timeout})
    _, alice = api.organization_with_user("acme", "alice")
    assert api.request("POST", "/v4/endpoints", alice, json={"name": "llm", "scope": "user"}).status_code == 201
    answer = api.request("POST", "/v4/workflows", alice, json={"definition": pool(port)})
    assert answer.status_code == 201, answer.text
    workflow, roving = UUID(answer.json()["id"]), api.services.roving
    node, _ = roving.register_node(NODE, 4, 8 << 30, {}, {}, "pool", "127.0.0.1", 9100, datetime.now(UTC))
    serve(api, workflow, port, node)
    assert roving.scale_service(workflow, "model", 1, 0, "in-flight-requests 0.00 per replica, target 1",
                                datetime.now(UTC))
    api.services.tailer.wait_for(roving.last_position)
    return api, alice, workflow, node


def test_a_pool_at_zero_keeps_its_endpoint_bound_with_no_replica_ready(service):  # noqa: F811
    api, _, workflow, _ = scaled_to_zero(service, "1s")
    llm = api.services.roving.repository.get(endpoint_id("llm"))
    assert llm.binding is not None and llm.serving_targets() == []
    found = api.services.roving.repository.get(workflow)
    assert [(p.service, p.size) for p in found.pools()] == [("model", 0)] and found.status == "STARTED"


def test_the_first_request_wakes_a_replica_and_is_answered_by_it(service):  # noqa: F811
    api, alice, workflow, node = scaled_to_zero(service, "20s")
    roving = api.services.roving

    def scheduler_and_agent() -> None:  # what the cluster does once the pool asks for a replica again
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and roving.repository.get(workflow).pools()[0].size == 0:
            time.sleep(0.05)
        serve(api, workflow, service, node)

    helper = threading.Thread(target=scheduler_and_agent, daemon=True)
    helper.start()
    started = time.monotonic()
    [answer] = through(api.app, ("/endpoints/llm/hello", {"FB-Authorization": f"Bearer {alice}"}))
    helper.join(timeout=20)
    assert answer.status_code == 200, answer.text
    assert time.monotonic() - started < 15
    messages = [e["message"] for e in api.request("GET", f"/v4/workflows/{workflow}/events", alice).json()["events"]]
    assert "Scaled from 0 to 1 replicas: woken by a request through endpoint llm" in messages


def test_a_replica_not_ready_within_the_bound_is_a_503_with_retry_after(service):  # noqa: F811
    api, alice, workflow, _ = scaled_to_zero(service, "1s")
    started = time.monotonic()
    [answer] = through(api.app, ("/endpoints/llm/hello", {"FB-Authorization": f"Bearer {alice}"}))
    assert answer.status_code == 503 and answer.headers["Retry-After"] == "5"
    assert 1 <= time.monotonic() - started < 10
    assert api.services.roving.repository.get(workflow).pools()[0].size == 1  # woken: it will be ready soon


@pytest.mark.parametrize("bad", ["-1", "101"])
def test_min_replicas_below_zero_or_past_the_limit_is_refused_naming_the_field(bad):
    from domain.fuzzfile import parse_fuzzfile
    errors = parse_fuzzfile(pool(8000).replace("min-replicas: 0", f"min-replicas: {bad}")).errors
    assert "services.model.autoscaler.min-replicas" in {e.path for e in errors}


def refusing(roving):
    """The pool's workflow ended after the views last saw it at zero: the aggregate refuses to scale it."""
    def scale_service(*args, **kwargs):
        raise Conflict("service model of workflow w has ended; it cannot scale")
    return scale_service


def test_a_pool_that_refuses_to_wake_is_answered_503_at_once_with_the_reason(service, monkeypatch):  # noqa: F811
    api, alice, _, _ = scaled_to_zero(service, "5s")
    monkeypatch.setattr(api.services.roving, "scale_service", refusing(api.services.roving))
    started = time.monotonic()
    [answer] = through(api.app, ("/endpoints/llm/hello", {"FB-Authorization": f"Bearer {alice}"}))
    assert answer.status_code == 503 and answer.headers["Retry-After"] == "5"
    assert "has ended; it cannot scale" in answer.json()["error"]
    assert time.monotonic() - started < 2  # not the whole 5 s bound


def concurrently(app, alice, count):
    headers = {"FB-Authorization": f"Bearer {alice}"}

    async def run():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://roving.test") as client:
            async def one():
                started = time.monotonic()
                answer = await client.get("/endpoints/llm/hello", headers=headers)
                return answer, time.monotonic() - started
            return await asyncio.gather(*(one() for _ in range(count)))
    return asyncio.run(run())


def test_requests_waiting_on_one_endpoint_share_one_wake_and_past_the_cap_are_503_at_once(service, monkeypatch):  # noqa: F811
    api, alice, _, _ = scaled_to_zero(service, "1s")
    api.app.state.settings = msgspec.structs.replace(api.app.state.settings, wake_waiters=4)
    wakes = []
    monkeypatch.setattr(wake_module, "wake", lambda *args: wakes.append(args) or wake_module.Wake(True))
    answers = concurrently(api.app, alice, 12)
    assert all(answer.status_code == 503 and answer.headers["Retry-After"] == "5" for answer, _ in answers)
    refused_at_once = [seconds for answer, seconds in answers if "too many requests are waiting" in answer.text]
    assert len(refused_at_once) == 8 and max(refused_at_once) < 1
    assert len(wakes) == 1  # one view read and one scale for the twelve, not one each every 0.1 s


def test_the_pool_is_asked_to_scale_at_most_once_every_few_seconds_an_endpoint(service, monkeypatch):  # noqa: F811
    api, alice, _, _ = scaled_to_zero(service, "1s")
    calls = []
    real = api.services.roving.scale_service
    monkeypatch.setattr(api.services.roving, "scale_service", lambda *a, **k: calls.append(a) or real(*a, **k))
    for _ in range(3):  # each waits its bound out, one after the other, while the pool is scaled back to zero
        [answer] = through(api.app, ("/endpoints/llm/hello", {"FB-Authorization": f"Bearer {alice}"}))
        assert answer.status_code == 503
        roving = api.services.roving
        workflow = roving.repository.get(UUID(str(api.services.views.endpoints.find("llm").binding.workflow_id)))
        if workflow.pools()[0].size:
            real(workflow.id, "model", 1, 0, "idle again", datetime.now(UTC))
            api.services.tailer.wait_for(roving.last_position)
    assert len(calls) == 1

"""A pool with `min-replicas: 0` scales to zero and keeps its endpoint; the first request through the proxy wakes a
replica and waits for it (within ROVING_WAKE_TIMEOUT), else it is answered 503 with Retry-After."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from uuid import UUID

import pytest

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

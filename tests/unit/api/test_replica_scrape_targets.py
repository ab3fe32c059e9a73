"""Prometheus' discovery of autoscaled replicas whose autoscaler queries their own metrics: the monitoring token
reads each ready replica with the workflow and service labels the queries select on; tenants read none of it."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID

from tests.unit.api.harness import Api, webhook_token
from tests.unit.api.test_scale_to_zero import NODE, serve


def pool(port: int, metric: str) -> str:
    return f"""
version: v4
services:
  model:
    image: {{uri: docker://alpine}}
    script: serve
    network:
      ports: [{{name: http, port: {port}}}]
      endpoints: [{{name: llm, port-name: http, persistent: true}}]
    autoscaler: {{min-replicas: 1, max-replicas: 2, metrics: [{metric}]}}
"""


def running(metric: str, port: int = 18080) -> tuple[Api, str, UUID]:
    api = Api()
    _, alice = api.organization_with_user("acme", "alice")
    assert api.request("POST", "/v4/endpoints", alice, json={"name": "llm", "scope": "user"}).status_code == 201
    answer = api.request("POST", "/v4/workflows", alice, json={"definition": pool(port, metric)})
    assert answer.status_code == 201, answer.text
    workflow = UUID(answer.json()["id"])
    node, _ = api.services.roving.register_node(NODE, 4, 8 << 30, {}, {}, "pool", "127.0.0.1", 9100, datetime.now(UTC))
    serve(api, workflow, port, node)
    return api, alice, workflow


def test_a_ready_replica_with_a_query_metric_is_a_scrape_target_labelled_with_its_workflow_and_service():
    api, alice, workflow = running("{name: queue, query: 'sum(queue_depth)', target: 5}")
    answer = api.request("GET", "/v4/endpoints/-/sd_config", webhook_token())
    assert answer.status_code == 200, answer.text
    assert answer.json() == [{"targets": ["127.0.0.1:18080"], "labels": {
        "roving_workflow": str(workflow), "roving_service": "model", "roving_endpoint": "llm"}}]
    assert api.request("GET", "/v4/endpoints/-/sd_config", api.admin).json() == answer.json()
    refused = api.request("GET", "/v4/endpoints/-/sd_config", alice)
    assert refused.status_code == 403 and "monitoring token only" in refused.text


def test_a_pool_scaled_only_on_endpoint_traffic_is_not_scraped():
    api, _, _ = running("{name: in-flight-requests, target: 1}")
    assert api.request("GET", "/v4/endpoints/-/sd_config", webhook_token()).json() == []

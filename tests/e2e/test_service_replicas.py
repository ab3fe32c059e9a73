"""A replica pool on the README stack: `replicas: 2` serves through one endpoint from both replicas (each answers with
its FB_TASK_ID); a replica whose readiness probe fails leaves the endpoint without being killed."""

from __future__ import annotations

import socket

from adapters.nats_server import free_port


def two_free_ports() -> int:
    """A port whose next one is free too (replica i serves the declared port + i - 1)."""
    for _ in range(50):
        base = free_port()
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", base + 1))
            except OSError:
                continue
        return base
    raise RuntimeError("no two consecutive free ports")


def test_a_replica_pool_of_two_serves_through_one_endpoint_and_an_unready_replica_leaves_it(stack, job_dir):
    created = stack.client.post("/v4/endpoints", json={"name": "pool", "scope": "user"})
    assert created.status_code == 201, created.text
    port, root = two_free_ports(), job_dir / "pool"
    definition = f"""
version: v4
services:
  web:
    image: {{uri: docker://alpine:3.20}}
    replicas: 2
    persist: true
    resource: {{cpu: {{cores: 1}}, memory: {{size: 64MiB}}}}
    readiness-probe: {{http-get: {{port: {port}, path: /healthy}}, initial-delay-seconds: 1, period-seconds: 1,
                       failure-threshold: 3}}
    network:
      ports: [{{name: http, port: {port}}}]
      endpoints: [{{name: pool, port-name: http, persistent: true}}]
    script: |
      mkdir -p {root}/$FB_TASK_ID && cd {root}/$FB_TASK_ID
      echo "replica $FB_TASK_ID" > id && touch healthy
      exec python3 -m http.server $FB_PORT_HTTP --bind 127.0.0.1
"""
    workflow_id = stack.submit(definition, "pool")
    endpoint = lambda: stack.client.get("/v4/endpoints/pool").json()  # noqa: E731
    stack.wait(lambda: len(endpoint()["targets"]) == 2, 60, "both replicas in endpoint pool")
    path = created.json()["path"] + "id"  # the admin's Roving token in Authorization is honoured, not forwarded
    assert {stack.client.get(path).text.strip() for _ in range(6)} == {"replica 1", "replica 2"}

    (root / "1" / "healthy").unlink()  # replica 1 fails its probe from now on
    stack.wait(lambda: endpoint()["targets"] == [f"127.0.0.1:{port + 1}"], 30, "replica 1 out of endpoint pool")
    assert {stack.client.get(path).text.strip() for _ in range(4)} == {"replica 2"}
    stages = {s["name"]: s for s in stack.workflow(workflow_id)["stages"]}
    assert stages["web[1]"]["status"] == "RUNNING"  # unready, not killed
    assert "Unready: readiness probe failed 3 times: HTTP 404 from /healthy" in stages["web[1]"]["reason"]
    assert "Workflow.ServiceUnready" in [e["type"] for e in stack.events(workflow_id)]
    assert stack.client.post(f"/v4/workflows/{workflow_id}:stop").status_code == 200

"""Secrets on the real stack (embedded nats-server, JetStream log, DuckDB audit): a value goes in over HTTP and
never comes back out: not in an answer, the log's stored events, an audit row or a log line; a job gets it."""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC, datetime
from uuid import uuid4

import httpx
import pytest
import structlog

from adapters.secret_store import open_secret_store
from api.composition.settings import load_settings
from api.composition.stack import Stack
from api.http.routes import secrets as secret_routes
from domain.agent_protocol import Assignments
from domain.app.ids import user_id
from domain.tenancy import Role
from domain.tenancy.permissions import Principal
from projections.audit import AuditFilters, Scope
from tests.unit.secrets.world import start_spec

VALUE = "xoxb-integration-value-4b1d"
JOB = """
version: v1
jobs:
  train:
    image: {uri: docker://alpine}
    script: echo hi
    env: [TOKEN=secret://user/slack]
    resource: {cpu: {cores: 1}, memory: {size: 1GiB}}
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("roving")
    settings = load_settings({"ROVING_DATA_DIR": str(data_dir), "ROVING_CLUSTER": "secrets"})
    running = Stack(settings, scheduler=False).start()
    running.services.secrets = open_secret_store(running.roving, data_dir)  # the stack.py wiring
    running.http = running.app()
    running.http.router.routes[:0] = secret_routes.routes  # the api/http/routes/__init__.py wiring
    yield running
    running.stop()


def call(stack, method: str, path: str, **kwargs) -> httpx.Response:
    token = (stack.data_dir / "admin.token").read_text().strip()

    async def send() -> httpx.Response:
        transport = httpx.ASGITransport(app=stack.http)
        async with httpx.AsyncClient(transport=transport, base_url="http://roving.test") as client:
            return await client.request(method, path, headers={"Authorization": f"Bearer {token}"}, **kwargs)
    return asyncio.run(send())


def audit_rows(stack, wanted: str) -> list:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        rows = stack.audit.list(AuditFilters(limit=10_000), Scope(cluster_admin=True))
        if any(r.event_type.endswith(wanted) for r in rows):
            return rows
        time.sleep(0.1)
    raise AssertionError(f"no {wanted} row reached the audit log")


def test_a_secret_never_comes_back_from_answers_events_audit_or_logs(stack, caplog):
    caplog.set_level(logging.DEBUG)
    with structlog.testing.capture_logs() as logged:
        created = call(stack, "POST", "/v4/secrets", json={"name": "slack", "value": VALUE, "scope": "user"})
        listed = call(stack, "GET", "/v4/secrets")
        deleted = call(stack, "DELETE", f"/v4/secrets/{created.json()['id']}")
    assert (created.status_code, listed.status_code, deleted.status_code) == (201, 200, 200)
    assert [s["name"] for s in listed.json()["secrets"]] == ["slack"]
    assert VALUE not in created.text + listed.text + deleted.text
    stored = stack.roving.recorder.select_notifications(start=1, limit=100_000)
    assert any(b"SecretStored" in r.topic.encode() for r in stored)
    assert not any(VALUE.encode() in r.state for r in stored)
    rows = audit_rows(stack, "SecretRemoved")
    secret_rows = [r for r in rows if r.aggregate_kind == "secretshelf"]
    assert [r.event_type for r in secret_rows] == ["SecretShelf.Opened", "SecretShelf.SecretStored",
                                                   "SecretShelf.SecretRemoved"]
    assert secret_rows[1].payload["name"] == "slack"
    assert secret_rows[1].payload["secret_ciphertext"] == "[redacted]"
    assert VALUE not in repr(rows)
    assert any(e.get("path") == "/v4/secrets" for e in logged)  # the requests were logged, without the value
    assert VALUE not in repr(logged) + caplog.text


def test_a_job_handed_to_its_agent_gets_the_value_read_as_its_owner(stack):
    call(stack, "POST", "/v4/secrets", json={"name": "slack", "value": VALUE, "scope": "user"})
    admin = Principal(user_id=user_id("admin"), username="admin", role=Role.CLUSTER_ADMIN, organization_id=None,
                      is_cluster_admin=True)
    wid = uuid4()
    stack.roving.submit_workflow(wid, "w", JOB, 0, None, admin, datetime.now(UTC), definitions=[])
    stage = next(iter(stack.roving.repository.get(wid).stages.values()))
    answer = Assignments([start_spec(workflow_id=str(wid), env=dict(stage.spec.env))], [])
    assert stack.services.secrets.resolve_assignments(answer).start[0].env["TOKEN"] == VALUE

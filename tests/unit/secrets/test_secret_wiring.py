"""End to end through the HTTP API once the wiring in the report is applied (the submission check in
`WorkflowHandlers.submit_workflow`, the assignments route's resolution): skipped until it is."""

from __future__ import annotations

import inspect
from datetime import UTC, datetime
from uuid import UUID

import pytest

from api.http.routes import agent as agent_route
from domain.app import workflows
from domain.app.ids import allocation_id
from domain.tenancy import Role, Source
from tests.unit.api.harness import token
from tests.unit.secrets.harness import secrets_api

VALUE = "sk-wired-value-9d2"
AGENT = token("agent", Role.USER, source=Source.AGENT)
JOB = """
version: v1
jobs:
  hello:
    image: {uri: docker://alpine}
    script: echo hello
    env: [TOKEN=%s]
    resource: {cpu: {cores: 1}, memory: {size: 1GiB}}
"""
SUBMISSION_WIRED = "check_references" in inspect.getsource(workflows)
ASSIGNMENTS_WIRED = "resolved" in inspect.getsource(agent_route.assignments)


@pytest.fixture
def api(tmp_path):
    api = secrets_api(tmp_path)
    api.acme, api.alice = api.organization_with_user("acme", "alice")
    api.globex, api.mallory = api.organization_with_user("globex", "mallory")
    created = api.request("POST", "/v4/secrets", api.alice, json={"name": "hf", "value": VALUE})
    assert created.status_code == 201
    return api


@pytest.mark.skipif(not SUBMISSION_WIRED, reason="submit_workflow does not call check_references yet")
def test_a_foreign_reference_is_refused_at_submission_naming_it(api):
    answer = api.request("POST", "/v4/workflows", api.mallory, json={"name": "w", "definition": JOB % "secret://user/hf"})
    assert answer.status_code == 400
    assert answer.json()["errors"] == [{"path": "jobs.hello.env[0]", "message": answer.json()["errors"][0]["message"]}]
    assert answer.json()["errors"][0]["message"].startswith("secret://user/hf: ")
    assert VALUE not in answer.text


@pytest.mark.skipif(not (SUBMISSION_WIRED and ASSIGNMENTS_WIRED), reason="the wiring is not applied yet")
def test_the_agent_is_handed_the_value_and_the_user_never_is(api):
    node = api.request("POST", "/v4/agent/register", AGENT, json={"name": "n1", "cpu": 4, "memory": 8 * 2**30}).json()
    submitted = api.request("POST", "/v4/workflows", api.alice, json={"name": "w", "definition": JOB % "secret://user/hf"})
    assert submitted.status_code in (200, 201), submitted.text
    aid = allocation_id(UUID(submitted.json()["id"]), "hello", 1)
    api.services.roving.place(aid, [UUID(node["node_id"])], "scheduler", datetime.now(UTC))
    api.services.tailer.wait_for(api.services.roving.last_position)
    handed = api.request("GET", "/v4/agent/assignments", AGENT, params={"node_id": node["node_id"]})
    assert handed.json()["start"][0]["env"]["TOKEN"] == VALUE
    shown = api.request("GET", f"/v4/workflows/{submitted.json()['id']}", api.alice)
    assert shown.status_code == 200 and VALUE not in shown.text

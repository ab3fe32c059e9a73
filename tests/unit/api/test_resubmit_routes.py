"""Resubmit and retry: a new workflow of the caller from one they may see, the same definition or an edited one,
or (retry) only the jobs that did not finish; another tenant's workflow is not found; the definition as a Fuzzfile."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from uuid import UUID

import pytest
import yaml

from domain.app.ids import allocation_id
from domain.tenancy import Role, Source
from tests.unit.api.harness import Api, token

AGENT = token("agent", Role.USER, source=Source.AGENT)
PIPELINE = """version: v4
jobs:
  prepare:
    image: {uri: docker://alpine}
    script: echo prepare
    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}
  train:
    image: {uri: docker://alpine}
    script: exit 3
    depends-on: [{name: prepare, status: FINISHED}]
    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}
"""


@pytest.fixture(scope="module")
def api() -> Api:
    return Api()


@pytest.fixture(scope="module")
def alice(api) -> str:
    return api.organization_with_user("acme", "alice")[1]


@pytest.fixture(scope="module")
def bob(api) -> str:
    return api.organization_with_user("globex", "bob")[1]


def run_stage(api: Api, node: str, workflow: str, stage: str, exit_code: int) -> None:
    """The stage placed on `node` and ended with `exit_code`, as the scheduler and the node's agent tell it."""
    roving, aid = api.services.roving, allocation_id(UUID(workflow), stage, 1)
    epoch = roving.place(aid, [UUID(node)], "scheduler", datetime.now(UTC))
    roving.report(UUID(node), aid, epoch, "exited", exit_code, "", datetime.now(UTC))
    api.services.tailer.wait_for(roving.last_position)


@pytest.fixture(scope="module")
def failed(api, alice) -> str:
    """Alice's pipeline: prepare finished, train failed (exit 3)."""
    node = api.request("POST", "/v4/agent/register", AGENT,
                       json={"name": "n1", "cpu": 8, "memory": 16 * 2**30, "definition": "local"}).json()["node_id"]
    workflow = api.request("POST", "/v4/workflows", alice, json={"name": "pipeline", "definition": PIPELINE}).json()["id"]
    run_stage(api, node, workflow, "prepare", 0)
    run_stage(api, node, workflow, "train", 3)
    assert api.request("GET", f"/v4/workflows/{workflow}", alice).json()["status"] == "FAILED"
    return workflow


def test_retry_submits_only_the_jobs_that_did_not_finish_as_the_callers_new_workflow(api, alice, failed):
    answer = api.request("POST", f"/v4/workflows/{failed}:retry", alice, json={})
    assert answer.status_code == 201, answer.text
    assert answer.json()["jobs"] == ["train"] and answer.json()["retry_of"] == failed
    again = api.request("GET", f"/v4/workflows/{answer.json()['id']}", alice).json()
    assert [s["name"] for s in again["stages"]] == ["train"] and again["status"] == "PENDING"  # prepare's FINISHED holds
    assert again["submitted_by"] == "alice" and again["name"] == "pipeline"
    assert again["annotations"]["roving.io/retry-of"] == failed


def test_resubmit_with_an_edited_definition_and_name_is_a_new_workflow_of_the_caller(api, alice, failed):
    shown = api.request("GET", f"/v4/workflows/{failed}/definition", alice)
    assert shown.status_code == 200 and shown.json()["name"] == "pipeline"
    edited = shown.json()["definition"].replace("exit 3", "echo fixed")
    assert list(yaml.safe_load(edited)["jobs"]) == ["prepare", "train"]
    answer = api.request("POST", f"/v4/workflows/{failed}:resubmit", alice, json={"definition": edited, "name": "fixed"})
    assert answer.status_code == 201, answer.text
    again = api.request("GET", f"/v4/workflows/{answer.json()['id']}", alice).json()
    assert again["name"] == "fixed" and [s["name"] for s in again["stages"]] == ["prepare", "train"]
    assert again["annotations"]["roving.io/resubmitted-from"] == failed


def test_an_admin_resubmitting_a_tenants_workflow_makes_it_the_admins_own(api, failed):
    answer = api.request("POST", f"/v4/workflows/{failed}:resubmit", api.admin)
    assert answer.status_code == 201, answer.text
    assert api.request("GET", f"/v4/workflows/{answer.json()['id']}", api.admin).json()["submitted_by"] == "admin"


def test_another_tenant_can_neither_read_resubmit_nor_retry_the_workflow(api, bob, failed):
    for method, path in (("GET", "/definition"), ("POST", ":resubmit"), ("POST", ":retry")):
        answer = api.request(method, f"/v4/workflows/{failed}{path}", bob, **({"json": {}} if method == "POST" else {}))
        assert answer.status_code == 404, (path, answer.text)
    listed = api.request("GET", "/v4/workflows", bob).json()["workflows"]
    assert listed == []  # nothing was submitted in bob's name either


def test_retry_is_refused_while_the_workflow_runs_and_when_every_job_finished(api, alice):
    running = api.request("POST", "/v4/workflows", alice, json={"name": "busy", "definition": PIPELINE}).json()["id"]
    answer = api.request("POST", f"/v4/workflows/{running}:retry", alice, json={})
    assert answer.status_code == 409 and "PENDING" in answer.json()["error"]
    node = api.request("POST", "/v4/agent/register", AGENT,
                       json={"name": "n2", "cpu": 8, "memory": 16 * 2**30, "definition": "local"}).json()["node_id"]
    run_stage(api, node, running, "prepare", 0)
    run_stage(api, node, running, "train", 0)
    answer = api.request("POST", f"/v4/workflows/{running}:retry", alice, json={})
    assert answer.status_code == 409 and "nothing to retry" in answer.json()["error"]


def test_an_unknown_field_or_a_bad_edit_is_named(api, alice, failed):
    answer = api.request("POST", f"/v4/workflows/{failed}:resubmit", alice, json={"definiton": "x"})
    assert answer.status_code == 400 and "definiton" in answer.text
    answer = api.request("POST", f"/v4/workflows/{failed}:resubmit", alice, json={"definition": "jobs: 3"})
    assert answer.status_code == 400 and answer.json()["errors"][0]["path"]


def test_a_workflow_bound_to_a_profile_resubmits_and_retries_binding_the_profile_anew(api, alice):
    assert api.request("PUT", "/v4/profiles/tools", api.admin, json={"env": {"TOOLS": "/opt/tools"}}).status_code in (200, 201)
    bound = PIPELINE.replace("    script: echo prepare\n", "    script: echo prepare\n    profile: tools\n")
    workflow = api.request("POST", "/v4/workflows", alice, json={"name": "tooled", "definition": bound}).json()["id"]
    shown = api.request("GET", f"/v4/workflows/{workflow}/definition", alice).json()["definition"]
    assert "profile: tools" in shown and "roving-profile" not in shown  # what submission recorded is not the file's
    answer = api.request("POST", f"/v4/workflows/{workflow}:resubmit", alice, json={})
    assert answer.status_code == 201, answer.text
    again = yaml.safe_load(api.request("GET", f"/v4/workflows/{answer.json()['id']}/definition", alice).json()["definition"])
    assert again["jobs"] == yaml.safe_load(shown)["jobs"]  # the profile bound anew to the same values
    assert again["annotations"] == {"roving.io/resubmitted-from": workflow}


def test_the_definition_reads_as_written_scripts_as_blocks_and_no_variables_submission_added(api):
    assert api.request("POST", "/v4/endpoints", api.admin, json={"name": "notes"}).status_code == 201
    written = (Path(__file__).parents[3] / "examples" / "endpoint.yaml").read_text()
    workflow = api.request("POST", "/v4/workflows", api.admin, json={"name": "n", "definition": written}).json()["id"]
    api.request("PATCH", f"/v4/workflows/{workflow}:stop", api.admin)
    shown = api.request("GET", f"/v4/workflows/{workflow}/definition", api.admin).json()["definition"]
    assert "script: |\n      mkdir -p site" in shown and "FB_SERVICE_NOTES_ENDPOINT" not in shown
    assert yaml.safe_load(shown)["services"]["notes"]["script"] == yaml.safe_load(written)["services"]["notes"]["script"]
    again = api.request("POST", f"/v4/workflows/{workflow}:resubmit", api.admin, json={})
    assert again.status_code == 201, again.text
    kept = api.services.views.workflows.aggregate(UUID(again.json()["id"])).definition.services["notes"].env
    assert sorted(kept) == ["FB_SERVICE_NOTES_ENDPOINT_PATH=/endpoints/notes/",  # added by this submission, once
                            "FB_SERVICE_NOTES_ENDPOINT_URL=http://127.0.0.1:8080/endpoints/notes/"]

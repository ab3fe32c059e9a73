"""An auditor's questions on the README stack: who did what to a workflow, scoped to whoever asks."""

from __future__ import annotations

import httpx
import pytest

PASSWORD = "Correct-Horse-9-battery"
TRUE = "version: v4\njobs:\n  a:\n    image: {uri: docker://alpine}\n    command: [\"true\"]\n"


def account(stack, org_id: str, username: str, role: str) -> httpx.Client:
    created = stack.client.post(f"/v4/organizations/{org_id}/users",
                                json={"username": username, "email": f"{username}@example.org",
                                      "password": PASSWORD, "role": role})
    assert created.status_code == 201, created.text
    token = httpx.post(stack.url + "/v4/auth/login", json={"username": username, "password": PASSWORD}).json()["token"]
    return httpx.Client(base_url=stack.url, headers=stack.auth(token), timeout=30)


@pytest.fixture(scope="module")
def acme(stack):
    """acme's member dana ran a workflow to the end, and owner olga reads acme's audit rows."""
    org_id = stack.client.post("/v4/organizations", json={"name": "acme-audit"}).json()["id"]
    dana, olga = account(stack, org_id, "dana", "user"), account(stack, org_id, "olga", "org_owner")
    workflow_id = stack.submit(TRUE, "audited", client=dana)
    assert stack.wait_status(workflow_id, ("FINISHED", "FAILED"))["status"] == "FINISHED"
    yield org_id, workflow_id, dana, olga
    dana.close()
    olga.close()


def audit_rows(stack, client: httpx.Client, **params) -> list[dict]:
    answer = client.get("/v4/audit", params={"limit": 1000, **params})
    assert answer.status_code == 200, answer.text
    return answer.json()["rows"]


def test_the_audit_log_shows_a_workflows_events_with_who_did_them(stack, acme):
    _, workflow_id, _, _ = acme
    stack.wait(lambda: any(r["event_type"] == "Workflow.StageFinished" for r in audit_rows(stack, stack.client,
                                                                                          workflow=workflow_id)),
               10, "the audit feed to write the workflow's end")
    rows = audit_rows(stack, stack.client, workflow=workflow_id)
    submitted = next(r for r in rows if r["event_type"] == "Workflow.Submitted")
    assert (submitted["principal"], submitted["aggregate_id"]) == ("dana", workflow_id)
    assert {r["aggregate_kind"] for r in rows} >= {"workflow", "allocation"}
    assert {"scheduler", "agent"} <= {r["principal"] for r in rows}
    assert [r["position"] for r in rows] == sorted({r["position"] for r in rows})


def test_a_member_cannot_read_the_audit_log(stack, acme):
    _, _, dana, _ = acme
    assert dana.get("/v4/audit").status_code == 403
    assert dana.post("/v4/audit/query", json={"sql": "SELECT count(*) FROM audit"}).status_code == 403


def test_an_organization_owners_sql_sees_only_their_organization(stack, acme):
    org_id, _, _, olga = acme
    answer = olga.post("/v4/audit/query", json={"sql": "SELECT DISTINCT organization FROM audit"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["rows"] == [[org_id]]
    assert olga.get("/v4/audit", params={"organization": "another-org"}).status_code == 403


def test_an_organization_owner_sees_their_members_workflow(stack, acme):
    org_id, workflow_id, _, olga = acme
    answer = olga.post("/v4/audit/query", json={"sql": f"SELECT DISTINCT workflow FROM audit "
                                                       f"WHERE workflow = '{workflow_id}'"})
    assert answer.json()["rows"] == [[workflow_id]]


@pytest.mark.parametrize("sql, reason", [
    ("ATTACH '/tmp/stolen.duckdb' AS stolen", "ATTACH statements are refused"),
    ("COPY audit TO '/tmp/stolen.parquet' (FORMAT parquet)", "COPY statements are refused"),
    ("SELECT * FROM read_parquet('/tmp/stolen.parquet')", "read_parquet() are refused"),
])
def test_statements_reaching_for_files_are_refused_with_400(stack, acme, sql, reason):
    _, _, _, olga = acme
    for client in (stack.client, olga):
        answer = client.post("/v4/audit/query", json={"sql": sql})
        assert answer.status_code == 400 and reason in answer.json()["error"], answer.text

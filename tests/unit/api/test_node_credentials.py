"""Each node's agent holds its own credential: issued at registration, listed and revoked by cluster admins; a
revoked node is fenced (OFFLINE, its token refused, back only by an admin's hand)."""

from __future__ import annotations

from domain.tenancy import Source
from tests.unit.api.harness import Api, token

SHARED = token("agent", source=Source.AGENT)  # the bootstrap token every agent starts with


def register(api: Api, name: str, with_token: str = SHARED):
    body = {"name": name, "cpu": 4, "memory": 8 * 2**30, "definition": "local"}
    return api.request("POST", "/v4/agent/register", with_token, json=body)


def heartbeat(api: Api, node: dict, with_token: str):
    body = {"node_id": node["node_id"], "epoch": node["epoch"]}
    return api.request("POST", "/v4/agent/heartbeat", with_token, json=body)


def test_registration_answers_a_token_that_speaks_for_that_node_only():
    api = Api()
    n1, n2 = register(api, "n1").json(), register(api, "n2").json()
    assert heartbeat(api, n1, n1["token"]).status_code == 200
    refused = heartbeat(api, n2, n1["token"])
    assert refused.status_code == 403 and "node n1's" in refused.json()["error"]
    assert register(api, "n2", n1["token"]).status_code == 403


def test_admins_list_a_nodes_credentials_by_id_and_never_the_token():
    api = Api()
    node = register(api, "n1").json()
    listed = api.request("GET", "/v4/nodes/n1/credentials", api.admin).json()["credentials"]
    assert [(c["id"], c["revoked_at"]) for c in listed] == [(node["credential_id"], None)]
    assert node["token"] not in str(listed)
    _, alice = api.organization_with_user("acme", "alice")
    assert api.request("GET", "/v4/nodes/n1/credentials", alice).status_code == 403


def test_a_revoked_credential_fences_the_node_until_an_admin_readmits_it():
    api = Api()
    node = register(api, "n1").json()
    path = f"/v4/nodes/n1/credentials/{node['credential_id']}"
    revoked = api.request("DELETE", path, api.admin, json={"reason": "node stolen"})
    assert revoked.status_code == 200 and revoked.json()["fenced"] is True, revoked.text
    own = heartbeat(api, node, node["token"])
    assert own.status_code == 401 and "revoked" in own.json()["error"]
    shown = api.request("GET", "/v4/nodes/n1", api.admin).json()
    assert shown["status"] == "OFFLINE" and "node stolen" in shown["status_reason"]
    assert heartbeat(api, node, SHARED).status_code == 409  # the shared token cannot keep it alive either
    again = register(api, "n1")
    assert again.status_code == 403 and "fenced" in again.json()["error"] and "node stolen" in again.json()["error"]
    listed = api.request("GET", "/v4/nodes/n1/credentials", api.admin).json()["credentials"]
    assert (listed[0]["revoked_by"], listed[0]["reason"]) == ("admin", "node stolen")
    assert api.request("POST", "/v4/nodes/n1/readmit", api.admin).json() == {"readmitted": True}
    assert register(api, "n1").status_code == 200  # the agent comes back as any agent does


def test_an_admin_registering_a_fenced_node_readmits_it():
    api = Api()
    node = register(api, "n1").json()
    api.request("DELETE", f"/v4/nodes/n1/credentials/{node['credential_id']}", api.admin, json={"reason": "x"})
    assert register(api, "n1", api.admin).status_code == 200
    assert register(api, "n1").status_code == 200


def test_revoking_a_credential_the_node_never_had_names_it():
    api = Api()
    register(api, "n1")
    answer = api.request("DELETE", "/v4/nodes/n1/credentials/nope", api.admin, json={"reason": "x"})
    assert answer.status_code == 400 and "no credential nope" in answer.json()["error"]


def test_the_cli_lists_and_revokes_a_nodes_credential(capsys):
    from tests.unit.api.test_cli import run

    api = Api()
    node = register(api, "n1").json()
    code, out, _ = run(api, api.admin, ["node", "credential", "list", "n1"], capsys)
    assert code == 0 and node["credential_id"] in out
    code, out, _ = run(api, api.admin, ["node", "credential", "revoke", "n1", node["credential_id"], "--reason",
                                        "lost laptop", "-o", "json"], capsys)
    assert code == 0 and '"fenced": true' in out
    code, out, _ = run(api, api.admin, ["node", "credential", "list", "n1", "-o", "json"], capsys)
    assert '"reason": "lost laptop"' in out
    code, out, _ = run(api, api.admin, ["node", "readmit", "n1", "-o", "json"], capsys)
    assert code == 0 and '"readmitted": true' in out

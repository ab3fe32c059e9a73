"""Agents register and heartbeat; admins hold and release nodes by id or name; users only look."""

from datetime import UTC, datetime
from uuid import UUID

import pytest

from domain.tenancy import Role, Source
from tests.unit.api.harness import JOB, Api, token, webhook_token

AGENT = token("agent", Role.USER, source=Source.AGENT)
REGISTER = {"name": "n1", "cpu": 4, "memory": 8 * 2**30, "devices": {}, "annotations": {}, "definition": "local",
            "address": "10.0.0.1", "metrics_port": 9100}


@pytest.fixture(scope="module")
def api():
    return Api()


@pytest.fixture(scope="module")
def node(api):
    answer = api.request("POST", "/v4/agent/register", AGENT, json=REGISTER)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_a_registered_node_is_listed_in_the_contract_shape(api, node):
    nodes = api.request("GET", "/v4/nodes", api.admin).json()["nodes"]
    assert [(n["id"], n["name"], n["status"]) for n in nodes] == [(node["node_id"], "n1", "READY")]
    assert nodes[0]["holds"] == []


def test_registering_starts_the_node_lease_before_the_first_heartbeat():
    fresh = Api()
    answer = fresh.request("POST", "/v4/agent/register", AGENT, json=REGISTER)
    assert fresh.services.leases.touched == [answer.json()["node_id"]]


def test_a_heartbeat_refreshes_the_lease_and_a_stale_epoch_gets_409(api, node):
    body = {"node_id": node["node_id"], "epoch": node["epoch"], "running": []}
    assert api.request("POST", "/v4/agent/heartbeat", AGENT, json=body).json() == {
        "ok": True, "bus_key": node["bus_key"]}  # the node's agent bus key at its epoch, as registering answered
    assert node["node_id"] in api.services.leases.touched
    stale = api.request("POST", "/v4/agent/heartbeat", AGENT, json={**body, "epoch": node["epoch"] - 1})
    assert stale.status_code == 409


def test_assignments_and_config_answer_the_agent(api, node):
    assert api.request("GET", f"/v4/agent/assignments?node_id={node['node_id']}", AGENT).json() == {
        "start": [], "stop": [], "volumes": [], "position": api.services.views.position}
    answer = api.request("GET", "/v4/agent/config", AGENT)
    assert answer.json() == {"nats_url": "nats://agent:ag3nt@127.0.0.1:4222", "cluster": "test",
                             "log_max_bytes_per_stage": 0}
    assert "c0ntrol" not in answer.text  # the control plane's credentials could write any event


def test_a_report_for_an_unknown_allocation_is_404(api, node):
    body = {"node_id": node["node_id"], "allocation_id": "00000000-0000-0000-0000-000000000001",
            "epoch": node["epoch"], "event": "exited", "exit_code": 0}
    assert api.request("POST", "/v4/agent/reports", AGENT, json=body).status_code == 404


def test_a_user_token_cannot_speak_the_agent_protocol(api):
    _, user = api.organization_with_user("evil", "mallory")
    assert api.request("POST", "/v4/agent/register", user, json=REGISTER).status_code == 403


def test_cordon_by_name_shows_the_hold_and_uncordon_releases_it(api, node):
    placed = api.request("POST", "/v4/nodes/n1/cordon", api.admin, json={"reason": "bios update"})
    assert placed.status_code == 201
    hold = api.request("GET", f"/v4/nodes/{node['node_id']}", api.admin).json()["holds"][0]
    assert (hold["effect"], hold["source"], hold["reason"], hold["by"]) == ("cordon", "admin", "bios update", "admin")
    assert {"id", "at"} <= set(hold)
    assert api.request("POST", "/v4/nodes/n1/uncordon", api.admin).json()["released"] == [hold["id"]]
    assert api.request("GET", "/v4/nodes/n1/holds", api.admin).json()["holds"] == []


def test_a_user_may_not_cordon(api, node):
    _, user = api.organization_with_user("evil-cordon", "mallory-cordon")
    assert api.request("POST", "/v4/nodes/n1/cordon", user, json={"reason": "x"}).status_code == 403


def test_an_unknown_hold_effect_is_named(api, node):
    answer = api.request("POST", "/v4/nodes/n1/holds", api.admin, json={"effect": "melt"})
    assert answer.status_code == 400 and answer.json()["errors"][0]["path"] == "effect"


def test_an_unknown_node_is_404(api):
    assert api.request("GET", "/v4/nodes/nope", api.admin).status_code == 404
    assert api.request("POST", "/v4/nodes/nope/cordon", api.admin, json={}).status_code == 404


def test_service_discovery_lists_live_nodes_metrics_ports(api, node):
    groups = api.request("GET", "/v4/nodes/-/sd_config", webhook_token()).json()
    assert groups[0]["targets"] == ["10.0.0.1:9100"] and groups[0]["labels"]["node"] == "n1"


def test_alertmanager_body_errors_are_400(api):
    answer = api.request("POST", "/v4/alerts", api.admin, content=b'{"alerts": "no"}')
    assert answer.status_code == 400


def test_a_node_lists_only_the_work_its_reader_may_see():
    fresh = Api()
    node = fresh.request("POST", "/v4/agent/register", AGENT, json=REGISTER).json()["node_id"]
    placed = {}
    for org, person in (("acme", "alice"), ("globex", "bob")):
        _, placed[person] = fresh.organization_with_user(org, person)
        workflow = fresh.request("POST", "/v4/workflows", placed[person], json={"definition": JOB}).json()["id"]
        allocation = fresh.request("GET", f"/v4/workflows/{workflow}", placed[person]).json()["stages"][0]["allocation_id"]
        fresh.services.roving.place(UUID(allocation), [UUID(node)], "scheduler", datetime.now(UTC))
        placed[person] = (placed[person], allocation)
    fresh.services.tailer.wait_for(fresh.services.roving.last_position)
    alice, alices = placed["alice"]
    assert fresh.request("GET", "/v4/nodes", alice).json()["nodes"][0]["allocations"] == [alices]
    assert fresh.request("GET", "/v4/nodes/n1", alice).json()["allocations"] == [alices]
    everything = fresh.request("GET", "/v4/nodes", fresh.admin).json()["nodes"][0]["allocations"]
    assert sorted(everything) == sorted([alices, placed["bob"][1]])


def test_registering_anew_gives_the_node_a_new_agent_bus_key_and_other_nodes_another():
    fresh = Api()
    first = fresh.request("POST", "/v4/agent/register", AGENT, json=REGISTER).json()
    again = fresh.request("POST", "/v4/agent/register", AGENT, json=REGISTER).json()
    other = fresh.request("POST", "/v4/agent/register", AGENT, json={**REGISTER, "name": "n2"}).json()
    assert again["epoch"] > first["epoch"]
    assert len({first["bus_key"], again["bus_key"], other["bus_key"]}) == 3

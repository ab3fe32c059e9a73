"""A removed node's holds go with it, and its agent may register it again under the same name."""

from datetime import UTC, datetime
from uuid import UUID

from domain.tenancy import Role, Source
from tests.unit.api.harness import Api, token

AGENT = token("agent", Role.USER, source=Source.AGENT)
REGISTER = {"name": "n1", "cpu": 4, "memory": 2**30, "devices": {}, "annotations": {}, "definition": "local",
            "address": "127.0.0.1", "metrics_port": None}


def test_a_removed_node_shows_no_holds_and_registers_again_under_its_name():
    api = Api()
    first = api.request("POST", "/v4/agent/register", AGENT, json=REGISTER).json()
    assert api.request("POST", "/v4/nodes/n1/cordon", api.admin, json={"reason": "bios"}).status_code == 201
    api.services.roving.node_lost(UUID(first["node_id"]), datetime.now(UTC))
    assert api.request("DELETE", "/v4/nodes/n1", api.admin).json() == {"removed": True}
    removed = api.request("GET", "/v4/nodes/n1", api.admin).json()
    assert (removed["holds"], removed["accepts_new_work"], removed["removed"]) == ([], False, True)

    again = api.request("POST", "/v4/agent/register", AGENT, json={**REGISTER, "cpu": 8})
    assert again.status_code == 200, again.text
    assert again.json() == {**again.json(), "node_id": first["node_id"], "epoch": first["epoch"] + 1}
    shown = api.request("GET", "/v4/nodes/n1", api.admin).json()
    assert (shown["status"], shown["cpu"], shown["holds"], shown["removed"]) == ("READY", 8, [], False)
    assert shown["accepts_new_work"]
    assert [n["name"] for n in api.request("GET", "/v4/nodes", api.admin).json()["nodes"]] == ["n1"]

"""`roving provisioner create|list|show|delete` and the provisioner column of `roving node list`."""

import json
from datetime import UTC, datetime

import pytest

from domain.tenancy import Role, Source
from tests.unit.api.harness import Api, token
from tests.unit.api.test_cli import run

AGENT = token("agent", Role.USER, source=Source.AGENT)


@pytest.fixture(scope="module")
def api():
    return Api()


def test_create_list_show_and_delete_a_provisioner(api, capsys):
    code, out, err = run(api, api.admin, ["provisioner", "create", "elastic", "--provider", "local", "--cpu", "4",
                                          "--memory", "4GiB", "--max-nodes", "2", "--idle", "20s",
                                          "--annotation", "pool=elastic"], capsys)
    assert code == 0, err
    assert "maxNodes: 2" in out and "template: 4cpu/4GiB pool=elastic" in out
    code, out, _ = run(api, api.admin, ["provisioner", "list"], capsys)
    header, row = out.splitlines()
    assert header.split() == ["NAME", "PROVIDER", "TEMPLATE", "MAXNODES", "IDLESECONDS", "NODES"]
    assert row.split()[:3] == ["elastic", "local", "4cpu/4GiB"] and row.split()[-2:] == ["20.0", "-"]
    code, out, _ = run(api, api.admin, ["provisioner", "show", "elastic", "-o", "json"], capsys)
    assert json.loads(out)["template"] == {"cpu": 4, "memory": 4 * 2**30, "devices": {},
                                           "annotations": {"pool": "elastic"}, "segment": ""}
    code, out, _ = run(api, api.admin, ["provisioner", "delete", "elastic", "-o", "json"], capsys)
    assert code == 0 and json.loads(out)["deleted"] is True
    code, _, err = run(api, api.admin, ["provisioner", "show", "elastic"], capsys)
    assert code == 1 and "not found" in err


def test_bad_usage_exits_2_and_the_servers_refusal_exits_1(api, capsys):
    code, _, err = run(api, api.admin, ["provisioner", "create", "x", "--cpu", "4", "--memory", "1GiB"], capsys)
    assert code == 2 and "provider" in err
    code, _, err = run(api, api.admin, ["provisioner", "create", "x", "--provider", "local", "--max-nodes", "1",
                                        "--cpu", "4", "--memory", "1GiB", "--idle", "soon"], capsys)
    assert code == 2 and "--idle" in err
    code, _, err = run(api, api.admin, ["provisioner", "create", "x", "--provider", "command", "--max-nodes", "1",
                                        "--cpu", "4", "--memory", "1GiB"], capsys)
    assert code == 1 and "settings.create" in err
    user = token("ursula", Role.USER, org="00000000-0000-0000-0000-000000000001")
    code, _, err = run(api, user, ["provisioner", "create", "x", "--provider", "local", "--max-nodes", "1",
                                   "--cpu", "4", "--memory", "1GiB"], capsys)
    assert code == 1


def test_node_list_shows_which_provisioner_made_a_node_and_its_template(api, capsys):
    run(api, api.admin, ["provisioner", "create", "burst", "--provider", "local", "--cpu", "2", "--memory", "1GiB",
                         "--max-nodes", "1"], capsys)
    roving, now = api.services.roving, datetime.now(UTC)
    [rid] = roving.request_nodes("burst", ["a1"], now)
    roving.start_create("burst", rid, now)
    registered = api.request("POST", "/v4/agent/register", AGENT, json={"name": rid, "cpu": 2, "memory": 2**30,
                                                                         "definition": "burst"})
    assert registered.status_code == 200, registered.text
    code, out, _ = run(api, api.admin, ["node", "list"], capsys)
    assert code == 0
    [row] = [line for line in out.splitlines() if line.startswith(rid)]
    assert row.endswith("burst (CREATING, 2cpu/1GiB)")
    code, out, _ = run(api, api.admin, ["node", "list", "-o", "json"], capsys)
    [node] = [n for n in json.loads(out) if n["name"] == rid]
    assert node["provisioner"]["name"] == "burst" and node["provisioner"]["template"]["cpu"] == 2

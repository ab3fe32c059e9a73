"""`roving org member list ORG` and `roving group member list GROUP` show each member with their priority; the
old `group member GROUP USER` still adds one."""

import json

import pytest

from tests.unit.api.harness import PASSWORD, Api
from tests.unit.api.test_cli import run


@pytest.fixture(scope="module")
def api():
    api = Api()
    org, _ = api.organization_with_user("lattice", "ada")
    body = {"username": "bob", "email": "bob@lattice.org", "password": PASSWORD, "role": "user"}
    assert api.request("POST", f"/v4/organizations/{org}/users", api.admin, json=body).status_code == 201
    return api


def test_org_member_list_shows_each_member_with_role_and_priority(api, capsys):
    assert run(api, api.admin, ["user", "priority", "ada", "7"], capsys)[0] == 0
    code, out, err = run(api, api.admin, ["org", "member", "list", "lattice"], capsys)
    assert code == 0, err
    lines = [line.split() for line in out.splitlines()]
    assert lines[0] == ["USERNAME", "ROLE", "PRIORITY", "GROUPS"]
    assert ["ada", "user", "7", "-"] in lines and ["bob", "user", "0", "-"] in lines


def test_group_member_list_shows_each_members_priority_beside_the_groups_and_the_orgs(api, capsys):
    assert run(api, api.admin, ["group", "create", "lattice", "solvers"], capsys)[0] == 0
    assert run(api, api.admin, ["group", "update", "lattice/solvers", "--priority", "3"], capsys)[0] == 0
    assert run(api, api.admin, ["org", "priority", "lattice", "2"], capsys)[0] == 0
    assert run(api, api.admin, ["user", "priority", "bob", "5"], capsys)[0] == 0
    assert run(api, api.admin, ["group", "member", "lattice/solvers", "bob"], capsys)[0] == 0  # the old form adds
    code, out, err = run(api, api.admin, ["group", "member", "list", "lattice/solvers"], capsys)
    assert code == 0, err
    lines = [line.split() for line in out.splitlines()]
    assert lines == [["USERNAME", "ROLE", "PRIORITY", "GROUP_PRIORITY", "ORGANIZATION_PRIORITY"],
                     ["bob", "member", "5", "3", "2"]]
    code, out, _ = run(api, api.admin, ["group", "member", "list", "lattice/solvers", "-o", "json"], capsys)
    assert [(m["username"], m["priority"]) for m in json.loads(out)] == [("bob", 5)]


def test_a_group_named_neither_by_id_nor_org_slash_name_is_bad_usage(api, capsys):
    with pytest.raises(SystemExit) as exit:
        run(api, api.admin, ["group", "member", "list", "solvers"], capsys)
    assert exit.value.code == 2 and "ORG/NAME" in capsys.readouterr().err


def test_a_member_lists_their_own_group_and_another_organization_sees_none_of_it(api, capsys):
    bob = api.request("POST", "/v4/auth/login", json={"username": "bob", "password": PASSWORD}).json()["token"]
    assert run(api, api.admin, ["group", "create", "lattice", "readers"], capsys)[0] == 0
    assert run(api, api.admin, ["group", "member", "lattice/readers", "bob"], capsys)[0] == 0
    code, out, err = run(api, bob, ["group", "member", "list", "lattice/readers"], capsys)
    assert code == 0 and "bob" in out, err
    _, eve = api.organization_with_user("rival", "eve")
    code, out, err = run(api, eve, ["group", "member", "list", "lattice/readers"], capsys)
    assert code == 1 and "bob" not in out + err
    code, out, err = run(api, eve, ["org", "member", "list", "lattice"], capsys)
    assert code == 1 and "bob" not in out + err

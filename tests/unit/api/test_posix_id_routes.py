"""Users' uids and groups' gids over the API: shown by `user show`/`group show`, set by cluster admins only, and
carried into the agent's assignment so a root agent runs the job as its owner."""

import json
from datetime import UTC, datetime
from uuid import UUID

import pytest

from api.cli.main import build_parser
from domain.app.ids import allocation_id
from domain.tenancy import Role, Source
from tests.unit.api.harness import JOB, Api, token
from tests.unit.api.test_cli import run

AGENT = token("agent", Role.USER, source=Source.AGENT)


@pytest.fixture(scope="module")
def api():
    return Api()


@pytest.fixture(scope="module")
def alice(api):
    org, alice_token = api.organization_with_user("acme", "alice")
    users = api.request("GET", f"/v4/organizations/{org}/users", api.admin).json()["users"]
    return next(u for u in users if u["username"] == "alice")["id"], alice_token, org


def test_user_show_gives_the_allocated_uid(api, alice):
    uid, alice_token, _ = alice
    shown = api.request("GET", f"/v4/users/{uid}", alice_token).json()
    assert shown["username"] == "alice" and 100000 <= shown["uid"] <= 199999
    assert "password_hash" not in shown
    assert api.request("GET", "/v4/auth/whoami", alice_token).json()["uid"] == shown["uid"]


def test_an_admin_sets_a_uid_and_user_show_says_so(api, alice):
    uid, alice_token, _ = alice
    assert api.request("PUT", f"/v4/users/{uid}/uid", api.admin, json={"uid": 4242}).status_code == 200
    api.services.tailer.wait_for(api.services.roving.last_position)
    assert api.request("GET", f"/v4/users/{uid}", alice_token).json()["uid"] == 4242


def test_a_user_cannot_choose_a_uid(api, alice):
    uid, alice_token, _ = alice
    answer = api.request("PUT", f"/v4/users/{uid}/uid", alice_token, json={"uid": 1000})
    assert answer.status_code == 403


def test_uid_0_is_refused_naming_the_field(api, alice):
    uid, _, _ = alice
    answer = api.request("PUT", f"/v4/users/{uid}/uid", api.admin, json={"uid": 0})
    assert answer.status_code == 400 and "posix.allowRootJobs" in answer.text and "uid" in answer.text


def test_group_show_gives_the_gid_an_admin_set(api, alice):
    _, _, org = alice
    group = api.request("POST", f"/v4/organizations/{org}/groups", api.admin, json={"name": "lab"}).json()["id"]
    api.services.tailer.wait_for(api.services.roving.last_position)
    assert 200000 <= api.request("GET", f"/v4/groups/{group}", api.admin).json()["gid"] <= 299999
    api.request("PUT", f"/v4/groups/{group}/gid", api.admin, json={"gid": 7000})
    api.services.tailer.wait_for(api.services.roving.last_position)
    assert api.request("GET", f"/v4/groups/{group}", api.admin).json()["gid"] == 7000


def test_the_assignment_carries_the_owners_uid_and_gid(api, alice):
    uid, alice_token, _ = alice
    node = api.request("POST", "/v4/agent/register", AGENT,
                       json={"name": "n1", "cpu": 4, "memory": 8 * 2**30, "definition": "local"}).json()
    answer = api.request("POST", "/v4/workflows", alice_token, json={"name": "w", "definition": JOB})
    assert answer.status_code in (200, 201), answer.text
    aid = allocation_id(UUID(answer.json()["id"]), "hello", 1)
    api.services.roving.place(aid, [UUID(node["node_id"])], "scheduler", datetime.now(UTC))
    api.services.tailer.wait_for(api.services.roving.last_position)
    started = api.request("GET", "/v4/agent/assignments", AGENT, params={"node_id": node["node_id"], "wait": "0"})
    (spec,) = started.json()["start"]
    shown = api.request("GET", f"/v4/users/{uid}", alice_token).json()
    assert (spec["uid"], spec["username"]) == (shown["uid"], "alice")
    assert spec["gid"] is not None and spec["gid"] != 0


def test_the_cli_sets_and_shows_uids_and_gids(api, capsys):
    org, _ = api.organization_with_user("globex", "hank")
    assert run(api, api.admin, ["group", "create", org, "ops"], capsys)[0] == 0
    code, out, _ = run(api, api.admin, ["user", "update", "hank", "--uid", "5151", "-o", "json"], capsys)
    assert code == 0 and json.loads(out) == {"uid": 5151}
    api.services.tailer.wait_for(api.services.roving.last_position)
    assert json.loads(run(api, api.admin, ["user", "show", "hank", "-o", "json"], capsys)[1])["uid"] == 5151
    code, _, err = run(api, api.admin, ["group", "update", f"{org}/ops", "--gid", "5151", "-o", "json"], capsys)
    assert code == 0
    api.services.tailer.wait_for(api.services.roving.last_position)
    assert json.loads(run(api, api.admin, ["group", "show", f"{org}/ops", "-o", "json"], capsys)[1])["gid"] == 5151
    code, out, _ = run(api, api.admin, ["user", "update", "hank", "--uid", "auto", "-o", "json"], capsys)
    assert code == 0 and json.loads(out) == {"uid": 5151}  # auto keeps the uid it has
    code, _, err = run(api, api.admin, ["user", "update", "hank", "--uid", "0"], capsys)
    assert code == 1 and "uid" in err and "posix.allowRootJobs" in err  # the server's refusal, as every 4xx


def test_the_cli_refuses_a_negative_uid_before_asking(capsys):
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["user", "update", "hank", "--uid", "-5"])
    assert exited.value.code == 2 and "--uid" in capsys.readouterr().err

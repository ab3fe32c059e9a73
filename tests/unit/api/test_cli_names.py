"""People read names, scripts read ids: tables show users, groups and organizations by name, -o json keeps ids."""

import json

import pytest

from api.http.routes.names import Names
from domain.app.ids import user_id
from tests.unit.api.harness import JOB, PASSWORD, Api
from tests.unit.api.test_cli import run


@pytest.fixture(scope="module")
def api():
    return Api()


@pytest.fixture(scope="module")
def acme(api):
    """acme with groups ml and ops (ml may preempt ops), erin in ml (her workflow is queued); her token."""
    org, _ = api.organization_with_user("acme", "erin")
    groups = {name: api.request("POST", f"/v4/organizations/{org}/groups", api.admin, json={"name": name}).json()["id"]
              for name in ("ml", "ops")}
    assert api.request("PUT", f"/v4/groups/{groups['ml']}/members/{user_id('erin')}", api.admin, json={}).is_success
    assert api.request("PUT", f"/v4/groups/{groups['ml']}/preempt", api.admin,
                       json={"groups": [groups["ops"]]}).is_success
    token = api.request("POST", "/v4/auth/login", json={"username": "erin", "password": PASSWORD}).json()["token"]
    workflow = api.request("POST", "/v4/workflows", token, json={"name": "train", "definition": JOB}).json()["id"]
    return {"org": org, "token": token, "workflow": workflow, **groups}


def test_workflow_describe_names_its_owner_and_json_keeps_the_ids(api, acme, capsys):
    code, out, _ = run(api, acme["token"], ["workflow", "describe", acme["workflow"]], capsys)
    assert code == 0 and "owner: erin (group ml, organization acme)" in out.splitlines()
    code, out, _ = run(api, acme["token"], ["workflow", "describe", acme["workflow"], "-o", "json"], capsys)
    answer = json.loads(out)
    assert answer["owner"]["group_id"] == acme["ml"] and answer["owner"]["organization_id"] == acme["org"]
    assert (answer["user"], answer["group"], answer["organization"]) == ("erin", "ml", "acme")


def test_workflow_list_wide_shows_the_group_and_organization_by_name(api, acme, capsys):
    code, out, _ = run(api, acme["token"], ["workflow", "list", "-o", "wide"], capsys)
    header, row = out.splitlines()
    assert code == 0 and {"GROUP", "ORGANIZATION", "STAGES"} <= set(header.split())
    assert {"ml", "acme", "0/1"} <= set(row.split()) and acme["ml"] not in row


def test_queue_json_has_the_group_id_and_its_name(api, acme, capsys):
    code, out, _ = run(api, acme["token"], ["queue", "show", "-o", "json"], capsys)
    row = json.loads(out)[0]
    assert code == 0 and (row["group_id"], row["group"], row["user"]) == (acme["ml"], "ml", "erin")


def test_group_list_shows_preempt_lists_and_members_by_name(api, acme, capsys):
    code, out, _ = run(api, acme["token"], ["group", "list", "acme", "-o", "wide"], capsys)
    rows = {line.split()[1]: line.split() for line in out.splitlines()[1:]}
    assert code == 0 and rows["ml"][3] == "ops" and rows["ml"][5:] == ["erin=member"]  # not ops's id
    assert rows["ml"][4].isdigit()  # the gid
    code, out, _ = run(api, acme["token"], ["group", "list", "acme", "-o", "json"], capsys)
    assert next(g for g in json.loads(out) if g["name"] == "ml")["preempt"] == [acme["ops"]]


def test_user_list_wide_shows_groups_by_name_and_org_list_names_owners(api, acme, capsys):
    code, out, _ = run(api, acme["token"], ["user", "list", "acme", "-o", "wide"], capsys)
    assert code == 0 and out.splitlines()[0].split()[-2:] == ["GROUPS", "DISABLED"]
    assert out.splitlines()[1].split()[-2:] == ["ml", "no"]
    code, out, _ = run(api, api.admin, ["org", "list"], capsys)
    assert code == 0 and [line.split()[-1] for line in out.splitlines() if " acme " in line] == ["admin"]


def test_names_never_come_from_another_tenant(api, acme):
    api.organization_with_user("globex", "hank")
    tenancy = api.services.views.tenancy
    hank, admin = tenancy.principal_for(user_id("hank")), tenancy.principal_for(user_id("admin"))
    outsider, insider = Names(hank, tenancy), Names(admin, tenancy)
    assert insider.owner({"user_id": str(user_id("erin")), "group_id": acme["ml"], "organization_id": acme["org"]}) \
        == {"user": "erin", "group": "ml", "organization": "acme"}
    assert (outsider.user(user_id("erin")), outsider.group(acme["ml"]), outsider.organization(acme["org"])) \
        == (None, None, None)
    assert outsider.user(user_id("hank")) == "hank"


def test_group_update_and_whoami_answer_with_names(api, acme, capsys):
    code, out, _ = run(api, api.admin, ["group", "update", "acme/ops", "--preempt", "acme/ml"], capsys)
    assert code == 0 and "preempt: ml" in out.splitlines()
    code, out, _ = run(api, api.admin, ["group", "update", "acme/ops", "--preempt", "acme/ml", "-o", "json"], capsys)
    assert json.loads(out)["preempt"] == [acme["ml"]]
    code, out, _ = run(api, acme["token"], ["user", "whoami"], capsys)
    assert code == 0 and {"groups: ml", "organization: acme"} <= set(out.splitlines())

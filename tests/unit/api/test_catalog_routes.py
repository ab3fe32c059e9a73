"""The catalog over HTTP: sources per group, organization or cluster that other tenants never see, search, one
template's form, render and start; a source that cannot be read is reported beside the others' templates."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from uuid import UUID

import pytest
import yaml

from adapters.nats_server import free_port
from domain.tenancy import Role
from tests.catalog_fixtures import MARKDOWN_APP, commit, git, git_repository, reference_folder, write_app
from tests.unit.api.harness import PASSWORD, Api, token


@pytest.fixture
def world(tmp_path):
    api = Api()
    w = type("World", (), {})()
    w.api, w.tmp = api, tmp_path
    w.orgs, w.tokens, w.groups = {}, {"admin": api.admin}, {}
    for org, owner, group, members, others in (("acme", "olga", "lab", ["alice"], ["erin"]),
                                               ("globex", "bea", "ops", ["bob"], [])):
        org_id = call(api, "POST", "/v4/organizations", api.admin, {"name": org}).json()["id"]
        w.orgs[org] = org_id
        for username in [owner, *members, *others]:
            role = Role.ORG_OWNER if username == owner else Role.USER
            body = {"username": username, "email": f"{username}@{org}.org", "password": PASSWORD, "role": role.value}
            user = call(api, "POST", f"/v4/organizations/{org_id}/users", api.admin, body).json()["id"]
            w.tokens[username] = token(username, role, org=UUID(org_id))
            if username in members:
                w.groups.setdefault(group, call(api, "POST", f"/v4/organizations/{org_id}/groups", api.admin,
                                                {"name": group}).json()["id"])
                call(api, "PUT", f"/v4/groups/{w.groups[group]}/members/{user}", api.admin, {"role": "member"})
    return w


def call(api, method, path, token_, body=None, expect=None, **kwargs):
    answer = api.request(method, path, token_, json=body, **kwargs)
    if expect is not None:
        assert answer.status_code == expect, answer.text
    elif method != "GET":
        assert answer.status_code < 300, answer.text
    return answer


def add(w, name, location, scope="cluster", owner="", who="admin", expect=201, **extra):
    body = {"name": name, "location": str(location), "scope": scope, "owner": owner, **extra}
    return call(w.api, "POST", "/v4/catalog/sources", w.tokens[who], body, expect=expect).json()


def names(w, who, **params):
    answer = call(w.api, "GET", "/v4/catalog", w.tokens[who], params=params, expect=200).json()
    return sorted(t["key"] for t in answer["templates"])


def test_a_cluster_source_is_listed_searched_shown_and_rendered_for_every_user(world):
    add(world, "reference", reference_folder(world.tmp / "ref", "hello_world", "blender"))
    assert names(world, "bob") == ["reference/blender", "reference/hello_world"]
    assert names(world, "alice", q="HELLO") == ["reference/hello_world"]
    shown = call(world.api, "GET", "/v4/catalog/templates/hello_world", world.tokens["erin"], expect=200).json()
    assert [g["display_category"] for g in shown["groups"]] == ["Container", "Execution", "Resources", "Commands"]
    rendered = call(world.api, "POST", "/v4/catalog/templates/reference/hello_world:render".replace("reference/", ""),
                    world.tokens["erin"], {"values": {"Cores": 3}}, expect=200).json()
    assert yaml.safe_load(rendered["fuzzfile"])["jobs"]["helloworld"]["resource"]["cpu"]["cores"] == 3


def test_a_group_source_is_seen_by_its_members_only_and_never_by_another_tenant(world):
    source = add(world, "lab-apps", write_app(world.tmp / "lab", "greeter"), scope="group", owner=world.groups["lab"])
    assert source["owner"] == "lab"
    assert names(world, "alice") == ["lab-apps/greeter"]
    assert names(world, "erin") == [] and names(world, "bob") == [] and names(world, "olga") == []
    for who in ("erin", "bob"):
        assert call(world.api, "GET", "/v4/catalog/templates/greeter", world.tokens[who], expect=404)
        assert call(world.api, "DELETE", f"/v4/catalog/sources/{source['id']}", world.tokens[who], expect=404)
        listed = call(world.api, "GET", "/v4/catalog/sources", world.tokens[who], expect=200).json()["sources"]
        assert listed == []


def test_an_organization_source_is_seen_by_its_members_and_its_owner_manages_it(world):
    source = add(world, "acme-apps", git_repository(world.tmp / "repo", "hello_world"), scope="organization",
                 owner=world.orgs["acme"])
    assert source["kind"] == "git"
    assert names(world, "erin") == ["acme-apps/hello_world"] and names(world, "bob") == []
    call(world.api, "DELETE", f"/v4/catalog/sources/{source['id']}", world.tokens["erin"], expect=403)
    call(world.api, "DELETE", f"/v4/catalog/sources/{source['id']}", world.tokens["olga"], expect=200)
    assert names(world, "erin") == []


def test_reading_the_control_planes_disk_is_a_cluster_admins_to_add(world):
    folder = reference_folder(world.tmp / "ref", "hello_world")
    refused = add(world, "mine", folder, scope="organization", who="olga", expect=403)
    assert "cluster admin" in refused["error"]
    add(world, "mine", f"file://{folder}", scope="organization", who="olga", expect=403)
    add(world, "mine", folder, scope="group", owner=world.groups["lab"], who="alice", expect=403)
    add(world, "mine", folder, scope="cluster", who="olga", expect=403)


def test_an_organization_owner_may_add_a_remote_repository_only_where_an_admin_allows(world, tmp_path):
    """Issue 39: olga's git source made the control plane fetch any internal URL, and the error said what answered.
    Not allowed, allowed but silent, allowed with no such ref: one sentence, the same."""
    with git_daemon(tmp_path) as url:
        refusals = [add(world, "remote", f"{url}/catalog.git", scope="organization", who="olga", expect=400)]
        allow(world, ["git://127.0.0.1"])
        refusals.append(add(world, "remote", "git://127.0.0.1:9/catalog.git", scope="organization", who="olga",
                            expect=400))
        refusals.append(add(world, "remote", f"{url}/catalog.git", ref="no-such-branch", scope="organization",
                            who="olga", expect=400))
        refusals.append(add(world, "remote", "http://169.254.169.254/latest/meta-data", scope="organization",
                            who="olga", expect=400))
        assert len({r["error"] for r in refusals}) == 1 and "catalog.allowedSources" in refusals[0]["error"]
        assert all(r["errors"][0]["path"] == "location" for r in refusals)
        added = add(world, "remote", f"{url}/catalog.git", scope="organization", who="olga")
        assert added["owner"] == "acme" and names(world, "erin") == ["remote/hello_world"]
    detailed = add(world, "remote2", "https://127.0.0.1:9/catalog.git", expect=400)  # a cluster admin learns why
    assert "cannot read the source" in detailed["error"]


def allow(w, entries):
    call(w.api, "PUT", "/v4/admin/centralconfig", w.tokens["admin"], {"catalog.allowedSources": entries}, expect=200)


@contextlib.contextmanager
def git_daemon(root):
    """A git repository served by `git daemon` (git://) on loopback; yields its base URL."""
    git_repository(root / "work", "hello_world")
    subprocess.run(["git", "clone", "-q", "--bare", str(root / "work"), str(root / "site" / "catalog.git")],
                   check=True, capture_output=True)
    port = free_port()
    daemon = subprocess.Popen(["git", "daemon", "--export-all", f"--base-path={root / 'site'}", "--reuseaddr",
                               "--listen=127.0.0.1", f"--port={port}", str(root / "site")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while subprocess.run(["git", "ls-remote", f"git://127.0.0.1:{port}/catalog.git"],
                             capture_output=True).returncode != 0:
            assert time.monotonic() < deadline, "git daemon did not start"
            time.sleep(0.1)
        yield f"git://127.0.0.1:{port}"
    finally:
        daemon.terminate()
        daemon.wait(10)


def test_naming_another_organizations_group_as_owner_is_an_unknown_group(world):
    folder = reference_folder(world.tmp / "ref", "hello_world")
    theirs = add(world, "x", "https://127.0.0.1:9/x.git", scope="group", owner=world.groups["ops"], who="olga",
                 expect=404)
    nobody = add(world, "x", "https://127.0.0.1:9/x.git", scope="group", owner=str(UUID(int=7)), who="olga",
                 expect=404)
    assert theirs == nobody
    assert add(world, "x", folder, scope="group", owner=world.groups["lab"])["owner"] == "lab"


def test_a_source_that_cannot_be_read_is_reported_beside_the_others_templates(world):
    add(world, "good", reference_folder(world.tmp / "good", "hello_world"))
    broken = add(world, "broken", reference_folder(world.tmp / "broken", "blender"))
    shutil.rmtree(world.tmp / "broken")
    answer = call(world.api, "GET", "/v4/catalog", world.tokens["alice"], expect=200).json()
    assert [t["key"] for t in answer["templates"]] == ["good/hello_world"]
    status = {s["name"]: s for s in answer["sources"]}
    assert status["good"]["error"] == "" and status["good"]["templates"] == 1
    assert "not a readable folder" in status["broken"]["error"] and status["broken"]["id"] == broken["id"]
    missing = call(world.api, "GET", "/v4/catalog/templates/blender", world.tokens["alice"], expect=404).json()
    assert "broken" in missing["error"]


def test_a_git_source_follows_its_branch(world):
    repo = world.tmp / "repo"
    add(world, "repo", git_repository(repo, "hello_world"), ref="main")
    world.api.services.catalog.store.refresh_seconds = 0
    assert names(world, "alice") == ["repo/hello_world"]
    reference_folder(repo, "blender")
    commit(repo, "blender")
    assert names(world, "alice") == ["repo/blender", "repo/hello_world"]


def test_a_name_in_two_sources_is_named_as_source_slash_name(world):
    add(world, "one", reference_folder(world.tmp / "one", "hello_world"))
    add(world, "two", reference_folder(world.tmp / "two", "hello_world"))
    ambiguous = call(world.api, "GET", "/v4/catalog/templates/hello_world", world.tokens["alice"], expect=409)
    assert "one/hello_world" in ambiguous.json()["error"]
    shown = call(world.api, "GET", "/v4/catalog/templates/hello_world?source=two", world.tokens["alice"], expect=200)
    assert shown.json()["key"] == "two/hello_world"
    rendered = call(world.api, "POST", "/v4/catalog/templates/hello_world:render", world.tokens["alice"],
                    {"values": {}, "source": "one"}, expect=200)
    assert rendered.json()["template"] == "one/hello_world"


def test_bad_values_are_refused_naming_each_field(world):
    add(world, "reference", reference_folder(world.tmp / "ref", "hello_world"))
    refused = call(world.api, "POST", "/v4/catalog/templates/hello_world:render", world.tokens["alice"],
                   {"values": {"Cores": -1, "Nope": 1}}, expect=400).json()
    assert sorted(e["path"] for e in refused["errors"]) == ["values.Cores", "values.Nope"]


def test_start_submits_the_rendered_workflow_as_the_caller(world):
    add(world, "reference", reference_folder(world.tmp / "ref", "hello_world"))
    started = call(world.api, "POST", "/v4/catalog/templates/hello_world:start", world.tokens["alice"],
                   {"values": {"Script": "echo hi"}, "name": "my-hello"}, expect=201).json()
    seen = call(world.api, "GET", f"/v4/workflows/{started['id']}", world.tokens["alice"], expect=200).json()
    assert seen["name"] == "my-hello" and seen["submitted_by"] == "alice"
    assert started["template"] == "reference/hello_world"
    call(world.api, "GET", f"/v4/workflows/{started['id']}", world.tokens["bob"], expect=404)


def test_a_removed_source_name_can_be_added_again_pointing_elsewhere(world):
    first = add(world, "apps", reference_folder(world.tmp / "a", "hello_world"))
    add(world, "apps", reference_folder(world.tmp / "b", "blender"), expect=400)
    call(world.api, "DELETE", f"/v4/catalog/sources/{first['id']}", world.api.admin, expect=200)
    again = add(world, "apps", reference_folder(world.tmp / "b", "blender"))
    assert again["id"] == first["id"] and names(world, "alice") == ["apps/blender"]


def test_bad_source_fields_are_named(world):
    refused = add(world, "Bad Name", "relative/path", kind="folder", expect=400)
    assert sorted(e["path"] for e in refused["errors"]) == ["location", "name"]
    assert add(world, "x", "/tmp", scope="everyone", expect=400)["errors"][0]["path"] == "scope"
    assert add(world, "x", "/tmp", kind="svn", expect=400)["errors"][0]["path"] == "kind"


@pytest.mark.parametrize("location", ["https://user:s3cret@git.example.org/x.git", "https://s3cret@git.example.org/x",
                                      "ssh://git:s3cret@git.example.org/x.git"])
def test_a_repository_url_carrying_a_credential_is_refused_without_echoing_it(world, location):
    refused = add(world, "r", location, expect=400)
    assert refused["errors"][0]["path"] == "location" and "s3cret" not in refused["error"]
    assert "deploy key" in refused["error"]


def test_an_ssh_user_name_is_not_a_credential(world):
    refused = add(world, "r", "ssh://git@127.0.0.1:9/x.git", expect=400)  # refused for not answering, not for the user
    assert "cannot read the source" in refused["error"]


def test_a_folder_source_pointed_at_a_large_tree_is_refused_quickly(world, monkeypatch):
    from adapters import catalog_store

    monkeypatch.setattr(catalog_store, "MAX_ENTRIES", 5)
    folder = reference_folder(world.tmp / "big", "hello_world", "blender", "bwa_alignment")
    refused = add(world, "big", folder, expect=400)
    assert "holds more than 5 files and folders" in refused["error"]


def test_concurrent_adds_of_one_name_make_one_source_and_a_clear_refusal(world):
    from concurrent.futures import ThreadPoolExecutor
    from datetime import UTC, datetime

    from domain.app.errors import Invalid
    from domain.app.ids import user_id

    folder = str(reference_folder(world.tmp / "ref", "hello_world"))
    catalog = world.api.services.catalog
    admin = world.api.services.views.tenancy.principal_for(user_id("admin"))

    def attempt(_):
        try:
            catalog.add_source("race", "folder", folder, "", "cluster", "", admin, datetime.now(UTC))
            return "added"
        except Invalid as error:
            return str(error)

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(attempt, range(8)))
    assert outcomes.count("added") == 1
    assert all("already exists" in o for o in outcomes if o != "added")


@pytest.mark.parametrize("action", ['{{printf "%0999999999d" 1}}', "{{range 3000000}}x{{end}}",
                                    "{{range 10000}}{{range 10000}}{{end}}{{end}}",
                                    "{{" + "(" * 5000 + "1" + ")" * 5000 + "}}", "{{if 1}}" * 5000 + "{{end}}" * 5000,
                                    "{{$l := list}}{{range 5000}}{{$l = list $l}}{{end}}{{$l}}"])
def test_a_template_past_the_render_budget_is_a_4xx_naming_the_template_and_the_limit_within_seconds(world, action):
    """An organization owner writes the template, any member renders it: neither holds the control plane."""
    app = {**MARKDOWN_APP, "template": MARKDOWN_APP["template"].replace("echo {{ .Greeting }}", f"echo {action}")}
    add(world, "acme-apps", git_repository_of(world.tmp / "acme", "greeter", app), scope="organization",
        owner=world.orgs["acme"])  # file:// is an admin's to add; olga could add the same at a git:// URL
    started = time.monotonic()
    refused = call(world.api, "POST", "/v4/catalog/templates/greeter:render", world.tokens["erin"], {"values": {}},
                   expect=400).json()
    assert time.monotonic() - started < 10
    assert refused["errors"][0]["path"] == "template acme-apps/greeter"
    assert "limit" in refused["errors"][0]["message"]
    assert call(world.api, "GET", "/v4/catalog", world.tokens["erin"], expect=200)


def git_repository_of(root, name, files):
    """A git repository holding one app's files; its file:// URL (added by an admin: it reads the disk)."""
    write_app(root, name, files)
    git(root, "init", "-q", "-b", "main")
    commit(root, "app")
    return f"file://{root}"

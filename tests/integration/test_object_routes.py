"""`/v4/objects` over the real object store (a nats-server, the store on its own loop thread as in the stack):
what a user sees putting, getting, listing and deleting, and what other people cannot."""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading

import nats
import pytest

from adapters.object_store import ObjectStore
from domain.tenancy import Source
from tests.unit.api.harness import PASSWORD, Api, token

MAX = 8 * 2**20


@pytest.fixture(scope="module")
def api(nats_url):
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    nc = asyncio.run_coroutine_threadsafe(nats.connect(nats_url), loop).result(10)
    built = Api()
    built.services.objects = ObjectStore(nc.jetstream(), "routes", MAX, loop=loop)
    yield built
    asyncio.run_coroutine_threadsafe(nc.close(), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()


@pytest.fixture(scope="module")
def people(api):
    """acme: alice and carol in group lab, olga owns acme; globex: bob."""
    org, olga = api.organization_with_user("acme", "olga", role="org_owner")
    tokens = {"olga": olga}
    for name in ("alice", "carol"):
        body = {"username": name, "email": f"{name}@acme.org", "password": PASSWORD}
        user = api.request("POST", f"/v4/organizations/{org}/users", api.admin, json=body).json()["id"]
        tokens[name] = api.request("POST", "/v4/auth/login", json={"username": name, "password": PASSWORD}).json()["token"]
        tokens[name + "_id"] = user
    group = api.request("POST", f"/v4/organizations/{org}/groups", api.admin, json={"name": "lab"}).json()["id"]
    for name in ("alice", "carol"):
        api.request("PUT", f"/v4/groups/{group}/members/{tokens[name + '_id']}", api.admin, json={"role": "member"})
    _, tokens["bob"] = api.organization_with_user("globex", "bob")
    api.services.tailer.wait_for(api.services.roving.last_position)
    return tokens


def put(api, token, path, data, force=False):
    return api.request("PUT", path + ("?force=true" if force else ""), token, content=data)


def test_an_object_larger_than_the_request_body_cap_streams_in_and_out(api, people):
    data = os.urandom(5 * 2**20)  # over ROVING_MAX_BODY_BYTES' 4 MiB default: objects have their own bound
    created = put(api, people["alice"], "/v4/objects/user/runs/big.bin", data)
    assert created.status_code == 201, created.text
    assert created.json()["sha256"] == hashlib.sha256(data).hexdigest() and created.json()["result"] == "created"
    got = api.request("GET", "/v4/objects/user/runs/big.bin", people["alice"])
    assert got.status_code == 200 and got.content == data
    assert got.headers["content-length"] == str(len(data))
    head = api.request("HEAD", "/v4/objects/user/runs/big.bin", people["alice"])
    assert head.headers["roving-object-sha256"] == hashlib.sha256(data).hexdigest() and head.content == b""


def test_putting_different_content_over_an_object_is_refused_unless_forced(api, people):
    assert put(api, people["alice"], "/v4/objects/user/notes.txt", b"v1").status_code == 201
    same = put(api, people["alice"], "/v4/objects/user/notes.txt", b"v1")
    assert same.status_code == 200 and same.json()["result"] == "unchanged"
    refused = put(api, people["alice"], "/v4/objects/user/notes.txt", b"v2")
    assert refused.status_code == 409 and "--force" in refused.json()["error"]
    assert api.request("GET", "/v4/objects/user/notes.txt", people["alice"]).content == b"v1"
    forced = put(api, people["alice"], "/v4/objects/user/notes.txt", b"v2", force=True)
    assert forced.status_code == 201 and forced.json()["result"] == "replaced"
    assert api.request("GET", "/v4/objects/user/notes.txt", people["alice"]).content == b"v2"


def test_a_declared_length_over_the_object_bound_is_refused_before_it_is_read(api, people):
    answer = api.request("PUT", "/v4/objects/user/huge", people["alice"], content=b"x" * 16,
                         headers={"Content-Length": str(MAX + 1)})
    assert answer.status_code == 413 and "ROVING_OBJECT_MAX_BYTES" in answer.json()["error"]


def test_a_streamed_body_over_the_object_bound_is_refused_and_nothing_is_kept(api, people):
    async def chunks():  # no Content-Length: the bound is met while the body streams
        for _ in range(MAX // 2**20 + 2):
            yield b"x" * 2**20
    answer = api.request("PUT", "/v4/objects/user/huge2", people["alice"], content=chunks())
    assert answer.status_code == 413
    assert api.request("GET", "/v4/objects/user/huge2", people["alice"]).status_code == 404


def test_each_person_sees_only_their_own_user_objects(api, people):
    put(api, people["alice"], "/v4/objects/user/private.txt", b"alice's")
    assert api.request("GET", "/v4/objects/user/private.txt", people["carol"]).status_code == 404
    assert api.request("GET", "/v4/objects/user/private.txt", people["bob"]).status_code == 404
    names = [o["name"] for o in api.request("GET", "/v4/objects", people["carol"]).json()["objects"]]
    assert "private.txt" not in names


def test_a_group_shares_its_objects_with_its_members_and_no_one_else(api, people):
    assert put(api, people["alice"], "/v4/objects/group/lab/shared.csv", b"a,b\n").status_code == 201
    assert api.request("GET", "/v4/objects/group/lab/shared.csv", people["carol"]).content == b"a,b\n"
    assert api.request("GET", "/v4/objects/group/lab/shared.csv", people["olga"]).content == b"a,b\n"
    assert api.request("GET", "/v4/objects/group/lab/shared.csv", people["bob"]).status_code == 404
    assert put(api, people["bob"], "/v4/objects/group/lab/x", b"x").status_code == 404
    # carol may read and add, but replacing or deleting alice's object is for alice and the owners
    refused = put(api, people["carol"], "/v4/objects/group/lab/shared.csv", b"c,d\n", force=True)
    assert refused.status_code == 403 and "group's owners" in refused.json()["error"]
    assert api.request("DELETE", "/v4/objects/group/lab/shared.csv", people["carol"]).status_code == 403
    assert api.request("DELETE", "/v4/objects/group/lab/shared.csv", people["olga"]).status_code == 200
    assert api.request("GET", "/v4/objects/group/lab/shared.csv", people["alice"]).status_code == 404


def test_the_list_pages_by_name_under_a_folder(api, people):
    for index in range(5):
        put(api, people["carol"], f"/v4/objects/user/pages/{index}", str(index).encode())
    put(api, people["carol"], "/v4/objects/user/other", b"o")
    names, token = [], None
    while True:
        answer = api.request("GET", "/v4/objects", people["carol"], params={
            "location": "object://user/pages/", "page_size": 2, **({"page_token": token} if token else {})}).json()
        names.append([o["name"] for o in answer["objects"]])
        token = answer["next_page_token"]
        if token is None:
            break
    assert names == [["pages/0", "pages/1"], ["pages/2", "pages/3"], ["pages/4"]]
    assert answer["objects"][0]["object"] == "object://user/pages/4"


@pytest.mark.parametrize("path, reason", [("/v4/objects/user/a//b", "empty part"),
                                          ("/v4/objects/user/a/%2E%2E/b", "`..` part"),
                                          ("/v4/objects/user/dir/", "is a folder")])
def test_a_bad_name_is_a_400_naming_it(api, people, path, reason):
    answer = put(api, people["alice"], path, b"x")
    assert answer.status_code == 400, answer.text
    assert answer.json()["errors"][0]["path"] == "name" and reason in answer.json()["error"]


def test_agents_keep_no_objects(api, people):
    answer = put(api, token("agent", source=Source.AGENT), "/v4/objects/user/x", b"x")
    assert answer.status_code == 403 and "agent" in answer.json()["error"]


@pytest.mark.parametrize("value", ["anything", "2", "on", "yes please", ""])
def test_force_is_a_boolean_and_anything_else_neither_forces_nor_passes(api, people, value):
    """Issue 39: `?force=<anything>` replaced an object."""
    assert put(api, people["alice"], "/v4/objects/user/kept.txt", b"first").status_code in (200, 201)
    answer = api.request("PUT", "/v4/objects/user/kept.txt", people["alice"], params={"force": value}, content=b"other")
    if value == "":
        assert answer.status_code == 409, answer.text  # no value: not forced
    else:
        assert answer.status_code == 400 and answer.json()["errors"][0]["path"] == "force", answer.text
    assert api.request("GET", "/v4/objects/user/kept.txt", people["alice"]).content == b"first"


@pytest.mark.parametrize("name", ["a\\..\\b", "..\\secret", "dir\\file"])
def test_a_name_with_a_backslash_is_a_400_naming_it(api, people, name):
    answer = api.request("PUT", "/v4/objects/user/" + name.replace("\\", "%5C"), people["alice"], content=b"x")
    assert answer.status_code == 400 and answer.json()["errors"][0]["path"] == "name", answer.text
    assert "\\" in answer.json()["error"]

"""Each user's and group's objects are held to a quota (bytes, count) from the cluster config, all objects together
to the object store's own room; a full store is a 507 with the figures, and the log (so /readyz) is untouched."""

from __future__ import annotations

import asyncio
import threading
from contextlib import ExitStack
from uuid import UUID

import nats
import pytest

from adapters.object_ledger import PUTS_AT_ONCE
from adapters.object_meta import bucket_name
from adapters.object_store import ObjectStore
from domain.objects.access import Holder
from domain.objects.names import Scope
from tests.unit.api.harness import JOB, PASSWORD, Api

MAX = 8 * 2**20


@pytest.fixture
def api(nats_url):
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    nc = asyncio.run_coroutine_threadsafe(nats.connect(nats_url), loop).result(10)
    built = Api()
    built.services.objects = ObjectStore(nc.jetstream(), f"quota{id(built) % 10**6}", MAX, loop=loop)
    yield built
    asyncio.run_coroutine_threadsafe(nc.close(), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()


def people(api) -> dict[str, str]:
    org, olga = api.organization_with_user("acme", "olga", role="org_owner")
    tokens = {"olga": olga}
    for name in ("alice", "bob"):
        body = {"username": name, "email": f"{name}@acme.org", "password": PASSWORD}
        user = api.request("POST", f"/v4/organizations/{org}/users", api.admin, json=body).json()["id"]
        tokens[name] = api.request("POST", "/v4/auth/login", json={"username": name, "password": PASSWORD}).json()["token"]
        tokens[name + "_id"] = user
    group = api.request("POST", f"/v4/organizations/{org}/groups", api.admin, json={"name": "lab"}).json()["id"]
    api.request("PUT", f"/v4/groups/{group}/members/{tokens['alice_id']}", api.admin, json={"role": "member"})
    api.services.tailer.wait_for(api.services.roving.last_position)
    return tokens


def configure(api, **settings) -> None:
    answer = api.request("PUT", "/v4/admin/centralconfig", api.admin, json={f"objects.{k}": v for k, v in settings.items()})
    assert answer.status_code == 200, answer.text


def put(api, token, path, data):
    return api.request("PUT", path, token, content=data)


def test_a_users_objects_past_their_byte_quota_are_a_507_with_the_figures_and_keep_nothing(api):
    who = people(api)
    configure(api, userBytes="1MiB")
    assert put(api, who["alice"], "/v4/objects/user/a.bin", b"a" * 600_000).status_code == 201
    refused = put(api, who["alice"], "/v4/objects/user/b.bin", b"b" * 600_000)
    assert refused.status_code == 507, refused.text
    body = refused.json()
    assert body["quota"] == "objects.userBytes" and body["limit"] == 2**20 and body["used"] > 2**20
    assert "user alice's objects would pass their quota" in body["error"]
    assert api.request("GET", "/v4/objects/user/b.bin", who["alice"]).status_code == 404
    assert put(api, who["bob"], "/v4/objects/user/b.bin", b"b" * 600_000).status_code == 201  # bob has his own
    listed = api.request("GET", "/v4/objects", who["alice"]).json()["objects"]
    assert [o["name"] for o in listed] == ["a.bin"]


def test_a_declared_length_past_the_quota_is_refused_before_it_is_read(api):
    who = people(api)
    configure(api, userBytes=1000)
    refused = api.request("PUT", "/v4/objects/user/big", who["alice"], content=b"x" * 5000)
    assert refused.status_code == 507 and refused.json()["limit"] == 1000


def test_a_users_object_count_is_held_to_its_quota_and_a_delete_frees_a_place(api):
    who = people(api)
    configure(api, userObjects=2)
    for name in ("one", "two"):
        assert put(api, who["alice"], f"/v4/objects/user/{name}", name.encode()).status_code == 201
    refused = put(api, who["alice"], "/v4/objects/user/three", b"three")
    assert refused.status_code == 507 and refused.json() | {"error": ""} == {
        "error": "", "errors": refused.json()["errors"], "quota": "objects.userObjects", "used": 2, "limit": 2}
    assert put(api, who["alice"], "/v4/objects/user/two", b"two").status_code == 200  # the same again: unchanged
    assert api.request("DELETE", "/v4/objects/user/one", who["alice"]).status_code == 200
    assert put(api, who["alice"], "/v4/objects/user/three", b"three").status_code == 201


def test_a_groups_objects_have_the_group_quota(api):
    who = people(api)
    configure(api, userObjects=1, groupObjects=3)
    for n in range(3):
        assert put(api, who["alice"], f"/v4/objects/group/lab/f{n}", b"x").status_code == 201
    refused = put(api, who["alice"], "/v4/objects/group/lab/f3", b"x")
    assert refused.status_code == 507 and refused.json()["quota"] == "objects.groupObjects"


def test_a_full_object_store_is_a_507_naming_its_limit_and_readyz_and_the_log_are_untouched(api):
    who = people(api)
    configure(api, storeBytes="1MiB")
    assert put(api, who["alice"], "/v4/objects/user/a.bin", b"a" * 700_000).status_code == 201
    api.services.objects._store_seen = (-1e9, 0, 0)  # not the five seconds' cached sum: this test does not wait
    refused = put(api, who["bob"], "/v4/objects/user/b.bin", b"b" * 700_000)
    assert refused.status_code == 507, refused.text
    assert refused.json()["quota"] == "objects.storeBytes" and "used" not in refused.json()  # alice's use is hers
    assert api.request("GET", "/readyz").status_code == 200
    assert api.request("POST", "/v4/workflows", who["bob"], json={"definition": JOB}).status_code == 201


def test_a_quota_is_not_a_place_to_hide_a_bad_setting(api):
    answer = api.request("PUT", "/v4/admin/centralconfig", api.admin, json={"objects.userBytes": "lots"})
    assert answer.status_code == 400 and answer.json()["errors"][0]["path"] == "objects.userBytes"


def test_a_user_with_as_many_puts_running_as_allowed_gets_a_429_and_another_user_does_not(api):
    who = people(api)
    store = api.services.objects
    bucket = bucket_name(store.cluster, Holder(Scope.USER, UUID(who["alice_id"]), "alice"))
    with ExitStack() as running:  # alice's puts in flight, as the ledger holds them
        for _ in range(PUTS_AT_ONCE):
            running.enter_context(store.ledger.slot(bucket))
        refused = put(api, who["alice"], "/v4/objects/user/more", b"more")
        assert refused.status_code == 429 and refused.headers["Retry-After"] == "1"
        assert f"at most {PUTS_AT_ONCE} run at once" in refused.json()["error"]
        assert put(api, who["bob"], "/v4/objects/user/mine", b"mine").status_code == 201
    assert put(api, who["alice"], "/v4/objects/user/more", b"more").status_code == 201

"""Nodes, a workflow's events, audit rows and objects page as the workflow list does: at most `limit` rows and a
`next` cursor while more remain, each row once when followed; `q` searches names; a bad limit or cursor is a 400
naming it; the CLI's lists follow `next` to the end."""

import json

import pytest

from adapters.audit_feed import AuditFeed
from adapters.audit_log import AuditLog
from adapters.duckdb_store import AuditStore
from api.cli import pages
from domain.tenancy import Role, Source
from projections.audit import AuditProjection
from tests.unit.api.harness import JOB, Api, token
from tests.unit.api.test_audit_routes import sync
from tests.unit.api.test_cli_objects import run

AGENT = token("agent", Role.USER, source=Source.AGENT)
NODES = ["gpu-a", "gpu-b", "cpu-c", "cpu-d", "gpu-e"]


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    running = Api()
    store = AuditStore(tmp_path_factory.mktemp("audit") / "audit.duckdb")
    running.feed = AuditFeed(running.services.roving.recorder, AuditProjection(store, "test"))
    running.services.audit = AuditLog(store)
    yield running
    store.close()


@pytest.fixture(scope="module")
def filled(api):
    """Five nodes, alice's workflow (stopped, so it has several events), five of her objects, all in the audit."""
    for name in NODES:
        body = {"name": name, "cpu": 4, "memory": 8 * 2**30, "definition": "local"}
        assert api.request("POST", "/v4/agent/register", AGENT, json=body).status_code == 200
    _, alice = api.organization_with_user("acme", "alice")
    workflow = api.request("POST", "/v4/workflows", alice, json={"name": "w", "definition": JOB}).json()["id"]
    api.request("POST", f"/v4/workflows/{workflow}:stop", alice)
    for n in range(5):
        name = f"runs/{'log' if n % 2 else 'data'}-{n}.txt"
        assert api.request("PUT", f"/v4/objects/user/{name}", alice, content=b"x").status_code in (200, 201)
    sync(api.feed)
    return alice, workflow


def every_page(api, bearer, path, key, params):
    """Follow `next` from the first page to the last: every row in the order received, and the page count."""
    rows, count, after = [], 0, None
    while True:
        answer = api.request("GET", path, bearer, params={**params, **({"next": after} if after else {})})
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert len(body[key]) <= params["limit"]
        rows, count, after = rows + body[key], count + 1, body["next"]
        if after is None:
            return rows, count


def whole(api, bearer, path, key, params=None):
    answer = api.request("GET", path, bearer, params=params or {})
    assert answer.status_code == 200, answer.text
    assert answer.json().get("next") is None
    return answer.json()[key]


def test_nodes_page_by_name_and_following_next_reaches_every_node_once(api, filled):
    first = api.request("GET", "/v4/nodes", api.admin, params={"limit": 2}).json()
    assert len(first["nodes"]) == 2 and first["next"]
    rows, count = every_page(api, api.admin, "/v4/nodes", "nodes", {"limit": 2})
    assert [r["name"] for r in rows] == sorted(NODES) and count == 3
    assert [n["name"] for n in whole(api, api.admin, "/v4/nodes", "nodes")] == sorted(NODES)  # no limit: all


def test_nodes_are_searched_by_part_of_the_name(api, filled):
    rows, _ = every_page(api, api.admin, "/v4/nodes", "nodes", {"limit": 1, "q": "GPU"})
    assert [r["name"] for r in rows] == ["gpu-a", "gpu-b", "gpu-e"]


def test_a_workflows_events_page_in_the_order_they_happened(api, filled):
    alice, workflow = filled
    path = f"/v4/workflows/{workflow}/events"
    everything = whole(api, alice, path, "events")
    assert len(everything) >= 3
    rows, count = every_page(api, alice, path, "events", {"limit": 2})
    assert rows == everything and count == (len(everything) + 1) // 2


def test_audit_rows_page_with_next_and_reach_every_row_once(api, filled):
    everything = whole(api, api.admin, "/v4/audit", "rows", {"limit": 10_000})
    assert len(everything) > 7
    rows, count = every_page(api, api.admin, "/v4/audit", "rows", {"limit": 3})
    assert [r["position"] for r in rows] == [r["position"] for r in everything]
    assert count == (len(everything) + 2) // 3


def test_objects_page_with_limit_and_next_and_are_searched_by_name(api, filled):
    alice, _ = filled
    rows, count = every_page(api, alice, "/v4/objects", "objects", {"limit": 2})
    assert [r["object"] for r in rows] == [f"object://user/runs/{k}" for k in
                                           ("data-0.txt", "data-2.txt", "data-4.txt", "log-1.txt", "log-3.txt")]
    assert count == 3
    found = whole(api, alice, "/v4/objects", "objects", {"q": "LOG"})
    assert [r["object"] for r in found] == ["object://user/runs/log-1.txt", "object://user/runs/log-3.txt"]


@pytest.mark.parametrize("path, params, field", [
    ("/v4/nodes", {"limit": 0}, "limit"),
    ("/v4/nodes", {"limit": "ten"}, "limit"),
    ("/v4/nodes", {"next": "not-a-cursor"}, "next"),
    ("/v4/nodes", {"q": "x" * 300}, "q"),
    ("/v4/audit", {"next": "not-a-cursor"}, "next"),
    ("/v4/objects", {"limit": 1001}, "limit"),
    ("/v4/objects", {"next": "%%%"}, "next"),
])
def test_a_bad_limit_cursor_or_search_is_a_400_naming_it(api, filled, path, params, field):
    alice, _ = filled
    answer = api.request("GET", path, api.admin if path != "/v4/objects" else alice, params=params)
    assert answer.status_code == 400 and field in answer.text, answer.text


def test_a_cursor_from_another_list_is_a_400_naming_next(api, filled):
    alice, workflow = filled
    nodes_cursor = api.request("GET", "/v4/nodes", api.admin, params={"limit": 1}).json()["next"]
    for path, bearer in ((f"/v4/workflows/{workflow}/events", alice), ("/v4/audit", api.admin),
                         ("/v4/workflows", alice)):
        answer = api.request("GET", path, bearer, params={"limit": 1, "next": nodes_cursor})
        assert answer.status_code == 400 and "next" in answer.text, (path, answer.text)
    events = f"/v4/workflows/{workflow}/events"
    answer = api.request("GET", events, alice, params={"limit": -1})
    assert answer.status_code == 400 and "limit" in answer.text


def test_the_cli_lists_follow_next_to_the_last_page(api, filled, capsys, monkeypatch):
    alice, workflow = filled
    monkeypatch.setattr(pages, "PAGE", 2)  # every list comes in several pages
    _, out, _ = run(api, api.admin, ["node", "list", "-o", "json"], capsys)
    assert [n["name"] for n in json.loads(out)] == sorted(NODES)
    _, out, _ = run(api, alice, ["workflow", "events", workflow, "-o", "json"], capsys)
    assert json.loads(out) == whole(api, alice, f"/v4/workflows/{workflow}/events", "events")
    _, out, _ = run(api, api.admin, ["audit", "list", "--limit", "5", "-o", "json"], capsys)
    everything = whole(api, api.admin, "/v4/audit", "rows", {"limit": 10_000})
    assert [r["position"] for r in json.loads(out)] == [r["position"] for r in everything[:5]]
    code, out, _ = run(api, alice, ["object", "list", "runs/", "--page-size", "2", "-o", "json"], capsys)
    assert code == 0 and len(json.loads(out)) == 5


def test_audit_pages_do_not_skip_rows_of_clusters_that_share_a_position(api, filled, tmp_path):
    """A hub's audit holds several clusters' rows, whose positions repeat: a page may end between two of them."""
    store = AuditStore(tmp_path / "hub.duckdb")
    try:
        for cluster in ("east", "west"):
            sync(AuditFeed(api.services.roving.recorder, AuditProjection(store, cluster)))
        hub = Api()
        hub.services.audit = AuditLog(store)
        everything = whole(hub, hub.admin, "/v4/audit", "rows", {"limit": 10_000})
        assert {r["cluster"] for r in everything} == {"east", "west"}
        rows, _ = every_page(hub, hub.admin, "/v4/audit", "rows", {"limit": 3})
        assert [(r["position"], r["cluster"]) for r in rows] == [(r["position"], r["cluster"]) for r in everything]
    finally:
        store.close()

"""`workflow describe|events|log|why|stop` on a federated control plane with the id of another cluster's
workflow: found through the hub, answered from its own cluster's views under the same access decisions, and
a stop refused naming the cluster that owns it. Members are in-memory control planes (members.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import uuid4

import pytest

from api.http.routes import federation as hub_routes
from api.http.routes import workflows as workflow_routes
from api.http.routes.federation import HubUnavailable
from domain.scheduler.reasons import Reason, Why
from tests.unit.api.harness import Api
from tests.unit.api.test_cli import run
from tests.unit.federation.members import federated_api, hub_view, submit

NEEDS = "needs 64 cores; the largest node has 8"


@pytest.fixture(scope="module")
def world():
    """This cluster (`test`) and members c1, c2 with alice (acme) and bob (globex); c1's alice waits for cores,
    c2 does not answer and its control plane is at https://c2.example:8080."""
    here, members = federated_api(), {"c1": Api(), "c2": Api()}
    ids: dict[str, dict[str, str]] = {}
    tokens = {}
    for cluster, api in {"test": here, **members}.items():
        tokens["alice"] = api.organization_with_user("acme", "alice")[1]
        tokens["bob"] = api.organization_with_user("globex", "bob")[1]
        ids[cluster] = {who: submit(api, tokens[who], f"{cluster}-{who}") for who in ("alice", "bob")}
    c1 = members["c1"].services
    allocation = next(r.id for r in c1.views.queue.rows() if str(r.workflow_id) == ids["c1"]["alice"])
    c1.roving.record_blocked(allocation, Why(reason=Reason.INSUFFICIENT_RESOURCES, message=NEEDS),
                             by="scheduler", at=datetime.now(UTC))
    ids["c1"]["done"] = submit(members["c1"], tokens["alice"], "c1-done")
    assert members["c1"].request("PATCH", f"/v4/workflows/{ids['c1']['done']}:stop", tokens["alice"]).status_code == 200
    view = hub_view(members, down=("c2",))
    view.status.member("c2").api_url = "https://c2.example:8080"
    return here, view, ids, tokens


@pytest.fixture
def api(world, monkeypatch):
    here, view, _, _ = world
    monkeypatch.setattr(hub_routes, "load_view", lambda url: view)
    return here


def get(api, path, who=None, **params):
    return api.request("GET", path, who or api.admin, params=params)


def test_describe_answers_from_the_owning_cluster(api, world):
    _, _, ids, _ = world
    answer = get(api, f"/v4/workflows/{ids['c1']['alice']}")
    assert answer.status_code == 200, answer.text
    shown = answer.json()
    assert (shown["cluster"], shown["name"], shown["status"]) == ("c1", "c1-alice", "PENDING")
    assert shown["stages"][0]["name"] == "hello" and shown["available"] is True
    down = get(api, f"/v4/workflows/{ids['c2']['bob']}").json()
    assert (down["cluster"], down["name"], down["stale"], down["available"]) == ("c2", "c2-bob", True, False)
    assert "cluster" not in get(api, f"/v4/workflows/{ids['test']['alice']}").json()  # this cluster's own


def test_why_across_clusters_gives_the_owning_clusters_reason(api, world):
    _, _, ids, tokens = world
    for who in (None, tokens["alice"]):
        answer = get(api, f"/v4/workflows/{ids['c1']['alice']}/why", who)
        assert answer.status_code == 200, answer.text
        stage = answer.json()["stages"][0]
        assert (stage["stage"], stage["reason"], stage["detail"]) == ("hello", "INSUFFICIENT_RESOURCES", NEEDS)
        assert answer.json()["cluster"] == "c1"


def test_events_come_from_the_owning_cluster(api, world):
    _, _, ids, _ = world
    answer = get(api, f"/v4/workflows/{ids['c1']['alice']}/events").json()
    assert answer["cluster"] == "c1"
    assert any(NEEDS in e["message"] for e in answer["events"])


def test_following_another_clusters_workflow_streams_its_activity_to_the_end(api, world):
    _, _, ids, tokens = world
    answer = get(api, f"/v4/workflows/{ids['c1']['done']}/events", tokens["alice"], follow="true")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/event-stream")
    assert "event: activity" in answer.text and answer.text.rstrip().endswith('data: {"status":"CANCELED"}')


def test_a_tenant_never_sees_another_tenants_work_through_the_hub(api, world):
    _, _, ids, tokens = world
    for cluster in ("c1", "c2"):
        for suffix in ("", "/why", "/events", "/log/hello"):
            answer = get(api, f"/v4/workflows/{ids[cluster]['bob']}{suffix}", tokens["alice"])
            assert answer.status_code == 404, (cluster, suffix, answer.text)
            assert "c1" not in answer.text and "c2" not in answer.text
        stop = api.request("PATCH", f"/v4/workflows/{ids[cluster]['bob']}:stop", tokens["alice"])
        assert stop.status_code == 404 and "cluster" not in stop.json()
    assert get(api, f"/v4/workflows/{ids['c2']['alice']}", tokens["alice"]).status_code == 200


def test_stop_on_another_clusters_workflow_is_refused_naming_it(api, world):
    _, _, ids, tokens = world
    answer = api.request("PATCH", f"/v4/workflows/{ids['c2']['alice']}:stop", tokens["alice"])
    assert answer.status_code == 409, answer.text
    body = answer.json()
    assert (body["code"], body["cluster"], body["url"]) == ("other_cluster", "c2", "https://c2.example:8080")
    assert "belongs to cluster c2" in body["error"] and "https://c2.example:8080" in body["error"]
    c1 = api.request("PATCH", f"/v4/workflows/{ids['c1']['alice']}:stop", api.admin).json()
    assert c1["cluster"] == "c1" and c1["url"] is None and "belongs to cluster c1" in c1["error"]


def test_an_unknown_workflow_is_a_404_and_an_unreadable_hub_a_503(api, world, monkeypatch):
    _, _, ids, _ = world
    assert get(api, f"/v4/workflows/{uuid4()}/why").status_code == 404
    assert get(api, "/v4/workflows/not-an-id").status_code == 404

    def down(url):
        raise HubUnavailable(f"cannot reach the hub at {url}")
    monkeypatch.setattr(hub_routes, "load_view", down)
    answer = get(api, f"/v4/workflows/{ids['c1']['alice']}")
    assert answer.status_code == 503 and "cannot reach the hub" in answer.json()["error"]
    assert get(api, f"/v4/workflows/{ids['test']['alice']}").status_code == 200  # this cluster needs no hub


def test_a_log_is_read_from_the_owning_clusters_log_stream(api, world, monkeypatch):
    _, _, ids, _ = world
    asked = []

    def read(hub, domain, cluster, workflow_id, stage):
        asked.append((domain, cluster, workflow_id, stage))
        return b"hello from c1\n"
    monkeypatch.setattr(workflow_routes, "read_member_log", read)
    answer = get(api, f"/v4/workflows/{ids['c1']['alice']}/log/hello")
    assert answer.status_code == 200 and answer.text == "hello from c1\n"
    assert answer.headers["Roving-Cluster"] == "c1" and asked == [("c1", "c1", ids["c1"]["alice"], "hello")]

    def unreachable(*args):
        raise TimeoutError("no answer")
    monkeypatch.setattr(workflow_routes, "read_member_log", unreachable)
    answer = get(api, f"/v4/workflows/{ids['c2']['alice']}/log/hello")
    assert answer.status_code == 503 and "cluster c2" in answer.json()["error"]


def test_the_cli_why_and_stop_name_the_cluster(api, world, capsys):
    _, _, ids, tokens = world
    code, out, _ = run(api, tokens["alice"], ["workflow", "why", ids["c1"]["alice"]], capsys)
    assert code == 0 and "INSUFFICIENT_RESOURCES" in out and NEEDS in out
    code, out, _ = run(api, tokens["alice"], ["workflow", "describe", ids["c1"]["alice"]], capsys)
    assert code == 0 and "cluster: c1" in out
    code, _, err = run(api, tokens["alice"], ["workflow", "stop", ids["c2"]["alice"]], capsys)
    assert code == 1 and "belongs to cluster c2" in err and "HTTP 409" in err

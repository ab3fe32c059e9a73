"""`queue show|stats` on a federated control plane: every cluster's rows and figures, each labelled with its
cluster, scoped by `cluster=`, a quiet or unreachable member shown stale with the age of its data, and a
tenant seeing only their own work on every cluster. Members are in-memory control planes whose logs the
hub view is fed (tests.unit.federation.members); `load_view` is replaced so no hub is needed."""

from __future__ import annotations

import json
import re

import pytest

from api.http.routes import federation as hub_routes
from api.http.routes.federation import HubUnavailable
from projections.federated import STALE_SECONDS
from tests.unit.api.harness import Api
from tests.unit.api.test_cli import run
from tests.unit.federation.members import age_events, federated_api, hub_view, rows_by_cluster, submit


@pytest.fixture(scope="module")
def world():
    """This cluster (`test`) and members c1, c2, with alice (acme) and bob (globex) on each; c2 does not answer."""
    here, members = federated_api(), {"c1": Api(), "c2": Api()}
    ids: dict[str, dict[str, str]] = {}
    tokens = {}
    for cluster, api in {"test": here, **members}.items():
        tokens["alice"] = api.organization_with_user("acme", "alice")[1]
        tokens["bob"] = api.organization_with_user("globex", "bob")[1]
        ids[cluster] = {who: submit(api, tokens[who], f"{cluster}-{who}") for who in ("alice", "bob")}
    view = hub_view(members, down=("c2",))
    age_events(view, "c2", 600)
    return here, view, ids, tokens


@pytest.fixture
def api(world, monkeypatch):
    here, view, _, _ = world
    monkeypatch.setattr(hub_routes, "load_view", lambda url: view)
    return here


def get(api, path, who=None, **params):
    return api.request("GET", path, who or api.admin, params=params)


def test_the_queue_merges_every_cluster_with_each_row_labelled(api, world):
    _, _, ids, _ = world
    answer = get(api, "/v4/scheduler/queue").json()
    assert rows_by_cluster(answer) == {c: set(by.values()) for c, by in ids.items()}
    assert answer["total"] == 6 and answer["mine"] is False
    assert [c["cluster"] for c in answer["clusters"]] == ["c1", "c2", "test"]
    priorities = [r["priority"] for r in answer["queue"]]
    assert priorities == sorted(priorities, reverse=True)


def test_a_member_that_does_not_answer_is_stale_with_the_age_of_its_data_not_dropped(api, world):
    clusters = {c["cluster"]: c for c in get(api, "/v4/scheduler/queue").json()["clusters"]}
    assert clusters["c2"]["stale"] is True and clusters["c2"]["available"] is False
    assert clusters["c2"]["last_event_age_seconds"] >= 600 and clusters["c2"]["total"] == 2
    assert "does not answer" in clusters["c2"]["error"]
    assert clusters["c1"]["stale"] is False and clusters["c1"]["last_event_age_seconds"] < 600
    assert clusters["test"]["local"] is True and clusters["test"]["stale"] is False


def test_a_member_whose_source_went_quiet_is_stale(world, monkeypatch):
    here, view, _, _ = world
    c1 = view.status.member("c1")
    monkeypatch.setattr(c1, "active_seconds", STALE_SECONDS + 5)
    monkeypatch.setattr(hub_routes, "load_view", lambda url: view)
    clusters = {c["cluster"]: c for c in get(here, "/v4/scheduler/stats").json()["clusters"]}
    assert clusters["c1"]["available"] is True and clusters["c1"]["stale"] is True
    assert clusters["c1"]["last_contact_seconds"] == STALE_SECONDS + 5


def test_cluster_scopes_repeated_or_comma_separated(api, world):
    _, _, ids, _ = world
    assert rows_by_cluster(get(api, "/v4/scheduler/queue", cluster="c1").json()) == {"c1": set(ids["c1"].values())}
    for scope in ("c2,test", ["c2", "test"], ["c2,test", "c2"]):
        answer = get(api, "/v4/scheduler/queue", cluster=scope).json()
        assert set(rows_by_cluster(answer)) == {"c2", "test"} and answer["total"] == 4
        assert [c["cluster"] for c in answer["clusters"]] == ["c2", "test"]


def test_an_unknown_or_malformed_cluster_is_a_400_naming_it(api):
    for path in ("/v4/scheduler/queue", "/v4/scheduler/stats"):
        answer = get(api, path, cluster=["c1", "c9"])
        assert answer.status_code == 400, answer.text
        assert "unknown cluster 'c9'" in answer.json()["error"] and "c1, c2, test" in answer.json()["error"]
        assert answer.json()["errors"][0]["path"] == "cluster"
        assert get(api, path, cluster="C1!").status_code == 400


def test_a_tenant_sees_only_their_own_work_on_every_cluster(api, world):
    _, _, ids, tokens = world
    answer = get(api, "/v4/scheduler/queue", tokens["alice"], mine="false").json()
    assert answer["mine"] is True
    assert rows_by_cluster(answer) == {c: {by["alice"]} for c, by in ids.items()}
    bobs = {by["bob"] for by in ids.values()}
    assert not bobs & {r["workflow_id"] for r in answer["queue"]} and answer["total"] == 3


def test_stats_are_per_cluster_and_summed(api):
    answer = get(api, "/v4/scheduler/stats").json()
    per = {c["cluster"]: c for c in answer["clusters"]}
    assert sorted(per) == ["c1", "c2", "test"] and all(per[c]["total"] == 2 for c in per)
    assert answer["total"] == 6
    assert answer["depth"] == {k: sum(per[c]["depth"][k] for c in per) for k in answer["depth"]}
    assert per["c2"]["stale"] is True
    assert answer["last_pass"] == per["test"]["last_pass"] and answer["priority"] == per["test"]["priority"]
    assert [c["cluster"] for c in get(api, "/v4/scheduler/stats", cluster="c1").json()["clusters"]] == ["c1"]


def test_an_unreadable_hub_keeps_this_cluster_and_names_the_others_unavailable(world, monkeypatch):
    here, _, ids, _ = world

    def down(url):
        raise HubUnavailable(f"cannot reach the hub at {url} (NoServersError)")
    monkeypatch.setattr(hub_routes, "load_view", down)
    answer = get(here, "/v4/scheduler/queue").json()
    assert rows_by_cluster(answer) == {"test": set(ids["test"].values())}
    assert answer["hub"]["available"] is False and "cannot reach the hub" in answer["hub"]["error"]
    scoped = get(here, "/v4/scheduler/queue", cluster="c1,test").json()
    c1 = scoped["clusters"][0]
    assert (c1["cluster"], c1["available"], c1["stale"]) == ("c1", False, True) and "hub" in c1["error"]


def test_an_unreadable_hub_shows_what_it_last_held_every_member_stale(world, monkeypatch):
    here, view, ids, _ = world

    def down(url):
        raise HubUnavailable(f"cannot reach the hub at {url} (NoServersError)", last_view=view)
    monkeypatch.setattr(hub_routes, "load_view", down)
    answer = get(here, "/v4/scheduler/queue").json()
    assert rows_by_cluster(answer) == {c: set(by.values()) for c, by in ids.items()}
    remote = [c for c in answer["clusters"] if c["cluster"] != "test"]
    assert [(c["cluster"], c["available"], c["stale"]) for c in remote] == [("c1", False, True), ("c2", False, True)]
    assert all("cannot reach the hub" in c["error"] and c["last_event_age_seconds"] is not None for c in remote)
    why = get(here, f"/v4/workflows/{ids['c1']['alice']}")
    assert why.status_code == 200 and (why.json()["cluster"], why.json()["stale"]) == ("c1", True)


def test_without_a_hub_the_queue_is_this_clusters_and_only_it_may_be_named():
    bare = Api()
    assert "clusters" not in get(bare, "/v4/scheduler/queue").json()
    assert get(bare, "/v4/scheduler/queue", cluster="test").status_code == 200
    answer = get(bare, "/v4/scheduler/stats", cluster="c1")
    assert answer.status_code == 400 and "unknown cluster 'c1'" in answer.json()["error"]


def test_the_cli_shows_the_cluster_column_and_scopes(api, world, capsys):
    _, _, ids, _ = world
    code, out, err = run(api, api.admin, ["queue", "show", "--cluster", "c1", "--cluster", "c2"], capsys)
    lines = out.splitlines()
    assert code == 0 and lines[0].split()[0] == "CLUSTER"
    assert {line.split()[0] for line in lines[1:]} == {"c1", "c2"}
    assert {line.split()[4] for line in lines[1:]} == {"alice", "bob"}  # each cluster's users by name
    age = re.search(r"cluster c2 is stale.*newest event is (\d+) s old", err)
    assert age and int(age.group(1)) >= 600  # aged 600 s by the fixture, and the clock went on since
    code, out, _ = run(api, api.admin, ["queue", "stats", "--cluster", "c1,test", "-o", "json"], capsys)
    assert code == 0 and [c["cluster"] for c in json.loads(out)["clusters"]] == ["c1", "test"]
    code, out, _ = run(api, api.admin, ["queue", "stats"], capsys)
    assert code == 0 and out.splitlines()[0].split()[:3] == ["CLUSTER", "STALE", "AGE"]
    code, _, err = run(api, api.admin, ["queue", "show", "--cluster", "c9"], capsys)
    assert code == 2 and "unknown cluster 'c9'" in err

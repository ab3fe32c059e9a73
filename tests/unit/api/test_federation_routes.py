"""The federation routes answer cluster admins from a FederatedView of the hub; a down member is unavailable.

The view here is a real FederatedView fed with real Workflow events (as the hub would hold them) and a
FederationStatus in which c1 is in sync and c2 does not answer; `load_view` is replaced so no hub is needed.
"""

import json
from datetime import UTC, datetime
from uuid import UUID, uuid4

import msgspec
import pytest
import yaml
from eventsourcing.persistence import Mapper

from adapters.federation import FEDERATED_STREAM, FederationStatus, MemberStatus
from adapters.hub_log import Arrivals
from adapters.jetstream.client import RawMsg
from adapters.transcoder import MsgspecTranscoder
from api.composition.settings import load_settings
from api.http.routes import federation as routes
from domain.fuzzfile import parse_fuzzfile
from domain.workflow import Workflow
from projections.federated import FederatedView
from tests.unit.api.harness import Api
from tests.unit.api.test_cli import run

HUB = "nats://hub.test:4222"
FUZZFILE = "version: v4\njobs:\n  main: {image: {uri: docker://alpine:3.20}, script: 'true'}\n"
DOWN = "domain c2 does not answer: its nats-server is down or not connected to the hub as a leaf node"


def workflow_messages(cluster: str, name: str, start: int) -> tuple[UUID, list[tuple[int, str, dict, bytes]]]:
    """A submitted-and-started workflow's events as federated messages (seq, subject, headers, data)."""
    at = datetime.now(UTC)
    owner = {"organization": "org", "group": "grp", "user": "alice"}
    wf = Workflow.submit(uuid4(), name, parse_fuzzfile(FUZZFILE).definition, owner, by="alice", at=at)
    wf.stage_started("main", 1, "n1", at)
    mapper = Mapper(transcoder=MsgspecTranscoder())
    messages = []
    for offset, event in enumerate(wf.collect_events()):
        stored = mapper.to_stored_event(event)
        headers = {"Roving-Topic": stored.topic, "Roving-Version": str(stored.originator_version),
                   "Nats-Stream-Source": f"ROVING_{cluster.upper()} {start + offset} > > roving.{cluster}.>"}
        messages.append((start + offset, f"roving.{cluster}.workflow.{wf.id}", headers, stored.state))
    return wf.id, messages


def member(cluster: str, available: bool, last: int) -> MemberStatus:
    return MemberStatus(cluster=cluster, domain=cluster, stream=f"ROVING_{cluster.upper()}", reachable=available,
                        sourcing=True, lag=0, active_seconds=0.1, last_seen_seq=last,
                        member_last_seq=last if available else None, error=None if available else DOWN)


def hub_view() -> tuple[FederatedView, dict[str, list[UUID]]]:
    view, ids, seq = FederatedView(), {"c1": [], "c2": []}, 0
    for cluster in ("c1", "c2"):
        for n in range(2):
            wid, messages = workflow_messages(cluster, f"{cluster}-wf-{n}", 1 + 10 * n)
            ids[cluster].append(wid)
            for _, subject, headers, data in messages:
                seq += 1
                assert view.apply(Arrivals()([RawMsg(seq, subject, headers, data)]))
    view.status = FederationStatus(HUB, FEDERATED_STREAM, True, seq, [member("c1", True, 12), member("c2", False, 12)])
    return view, ids


@pytest.fixture(scope="module")
def api():
    running = Api()
    running.app.state.settings = msgspec.structs.replace(load_settings({}), federation_hub=HUB)
    return running


@pytest.fixture
def hub(monkeypatch):
    """The view every request gets, and the hub URLs it was asked for."""
    view, ids = hub_view()
    asked: list[str] = []

    def load(url: str) -> FederatedView:
        asked.append(url)
        return view
    monkeypatch.setattr(routes, "load_view", load)
    return view, ids, asked


def get(api, path, who=None, **params):
    return api.request("GET", path, who or api.admin, params=params)


def test_the_hub_comes_from_the_environment():
    assert load_settings({"ROVING_FEDERATION_HUB": " nats://hub:4222 "}).federation_hub == "nats://hub:4222"
    assert load_settings({}).federation_hub is None


@pytest.fixture(scope="module")
def tenant(api):
    """A user of an organization (no cluster admin): their token."""
    return api.organization_with_user("acme", "alice")[1]


def test_only_a_cluster_admin_may_ask(api, hub, tenant):
    for who in (tenant,):
        for path in ("/v4/federation/status", "/v4/federation/queue/stats", "/v4/federation/workflows",
                     f"/v4/federation/workflows/{uuid4()}", f"/v4/federation/workflows/{uuid4()}/events"):
            answer = get(api, path, who)
            assert answer.status_code == 403 and "cluster admin" in answer.json()["error"], (path, answer.text)
    assert get(api, "/v4/federation/status", None).status_code == 200
    assert api.request("GET", "/v4/federation/status").status_code == 401
    assert hub[2] == [HUB]


def test_without_a_hub_every_route_is_a_503_naming_the_setting(hub):
    bare = Api()  # ROVING_FEDERATION_HUB unset
    for path in ("/v4/federation/status", "/v4/federation/queue/stats", "/v4/federation/workflows",
                 f"/v4/federation/workflows/{uuid4()}/events"):
        answer = get(bare, path)
        assert answer.status_code == 503 and "ROVING_FEDERATION_HUB" in answer.json()["error"], answer.text
    assert hub[2] == []


def test_status_names_both_members_and_the_down_one_unavailable(api, hub):
    answer = get(api, "/v4/federation/status").json()
    assert (answer["hub"], answer["exists"], answer["messages"]) == (HUB, True, 8)  # a Submitted names its READY stages
    members = {m["cluster"]: m for m in answer["members"]}
    assert members["c1"]["available"] is True and members["c1"]["state"] == "in-sync"
    assert members["c2"]["available"] is False and members["c2"]["state"] == "unavailable"
    assert {c["cluster"]: (c["available"], c["events"]) for c in answer["clusters"]} == {
        "c1": (True, 4), "c2": (False, 4)}
    scoped = get(api, "/v4/federation/status", cluster="c2").json()
    assert [m["cluster"] for m in scoped["members"]] == ["c2"] and [c["cluster"] for c in scoped["clusters"]] == ["c2"]


def test_queue_stats_fan_out_and_scope(api, hub):
    stats = {s["cluster"]: s for s in get(api, "/v4/federation/queue/stats").json()["clusters"]}
    assert sorted(stats) == ["c1", "c2"]
    assert stats["c1"]["available"] is True and stats["c1"]["workflows"] == {"STARTED": 2}
    # down, but what the hub holds is kept: never an empty cluster
    assert stats["c2"]["available"] is False and stats["c2"]["workflows"] == {"STARTED": 2}
    assert stats["c2"]["error"] == DOWN
    for params in ({"cluster": "c1"}, {"cluster": ["c1"]}):
        only = get(api, "/v4/federation/queue/stats", **params).json()["clusters"]
        assert [s["cluster"] for s in only] == ["c1"]
    for params in ({"cluster": "c2,c1"}, {"cluster": ["c2", "c1"]}, {"cluster": ["c2,c1", "c1"]}):
        both = get(api, "/v4/federation/queue/stats", **params).json()["clusters"]
        assert [s["cluster"] for s in both] == ["c2", "c1"]


def test_a_cluster_outside_the_federation_and_a_bad_name_are_a_400_naming_it(api, hub):
    answer = get(api, "/v4/federation/queue/stats", cluster="c1,c9")
    assert answer.status_code == 400 and "unknown cluster 'c9'" in answer.json()["error"]
    assert "c1, c2" in answer.json()["error"] and answer.json()["errors"][0]["path"] == "cluster"
    answer = get(api, "/v4/federation/workflows", cluster="C1!")
    assert answer.status_code == 400 and answer.json()["errors"][0]["path"] == "cluster"


def test_workflows_name_their_cluster_and_its_availability(api, hub):
    _, ids, _ = hub
    answer = get(api, "/v4/federation/workflows").json()
    assert {(w["cluster"], w["id"]) for w in answer["workflows"]} == {
        (c, str(w)) for c, wids in ids.items() for w in wids}
    assert {w["cluster"]: w["available"] for w in answer["workflows"]} == {"c1": True, "c2": False}
    assert {c["cluster"]: c["available"] for c in answer["clusters"]} == {"c1": True, "c2": False}
    scoped = get(api, "/v4/federation/workflows", cluster="c2").json()
    assert {w["id"] for w in scoped["workflows"]} == {str(w) for w in ids["c2"]}
    assert [c["cluster"] for c in scoped["clusters"]] == ["c2"]


def test_a_workflow_and_its_events_come_from_the_owning_cluster(api, hub):
    _, ids, _ = hub
    wid = str(ids["c2"][1])
    shown = get(api, f"/v4/federation/workflows/{wid}").json()
    assert (shown["id"], shown["cluster"], shown["name"], shown["status"]) == (wid, "c2", "c2-wf-1", "STARTED")
    assert shown["available"] is False and shown["error"] == DOWN
    assert shown["stages"][0]["name"] == "main" and shown["stages"][0]["node"] == "n1"
    events = get(api, f"/v4/federation/workflows/{wid}/events").json()
    assert events["cluster"] == "c2" and events["available"] is False
    assert [e["type"] for e in events["events"]] == ["Workflow.Submitted", "Workflow.StageStarted"]
    assert {e["cluster"] for e in events["events"]} == {"c2"} and events["events"][0]["origin_seq"] == 11
    c1 = get(api, f"/v4/federation/workflows/{ids['c1'][0]}/events", cluster="c1").json()
    assert c1["cluster"] == "c1" and c1["available"] is True


def test_an_unknown_or_scoped_out_workflow_is_a_404(api, hub):
    _, ids, _ = hub
    for path, params in ((f"/v4/federation/workflows/{uuid4()}", {}), ("/v4/federation/workflows/not-a-uuid", {}),
                         (f"/v4/federation/workflows/{ids['c2'][0]}/events", {"cluster": "c1"}),
                         (f"/v4/federation/workflows/{ids['c2'][0]}", {"cluster": "c1"})):
        answer = get(api, path, **params)
        assert answer.status_code == 404 and "is not in" in answer.json()["error"], (path, answer.text)


def test_an_unreachable_hub_is_a_503_with_the_reason(api, monkeypatch):
    def down(url: str) -> FederatedView:
        raise routes.HubUnavailable(f"cannot reach the hub at {url} (NoServersError): start the hub nats-server")
    monkeypatch.setattr(routes, "load_view", down)
    answer = get(api, "/v4/federation/workflows")
    assert answer.status_code == 503 and "cannot reach the hub" in answer.json()["error"]


def test_load_view_against_a_closed_port_raises_hub_unavailable():
    with pytest.raises(routes.HubUnavailable, match="cannot reach the hub"):
        routes.load_view("nats://127.0.0.1:1", timeout=0.5)


def test_no_federated_stream_yet_is_a_503_but_status_says_so(api, monkeypatch):
    empty = FederatedView()
    empty.status = FederationStatus(HUB, FEDERATED_STREAM, False, 0, [])
    monkeypatch.setattr(routes, "load_view", lambda url: empty)
    assert get(api, "/v4/federation/status").json()["exists"] is False
    answer = get(api, "/v4/federation/queue/stats")
    assert answer.status_code == 503 and "roving federate" in answer.json()["error"]


def test_the_cli_fans_out_scopes_and_shows_the_down_member(api, hub, tenant, capsys):
    _, ids, _ = hub
    code, out, _ = run(api, api.admin, ["federation", "status"], capsys)
    assert code == 0 and "ROVING_FEDERATED on" in out and "unavailable" in out
    code, out, _ = run(api, api.admin, ["federation", "queue-stats", "-o", "json"], capsys)
    assert code == 0 and [s["cluster"] for s in json.loads(out)["clusters"]] == ["c1", "c2"]
    code, out, _ = run(api, api.admin, ["federation", "queue-stats", "--cluster", "c2"], capsys)
    rows = out.splitlines()
    assert code == 0 and rows[0].split()[:2] == ["CLUSTER", "AVAILABLE"] and rows[1].split()[:2] == ["c2", "no"]
    assert len(rows) == 2
    code, out, err = run(api, api.admin, ["federation", "workflows", "--cluster", "c1", "--cluster", "c2"], capsys)
    assert code == 0 and str(ids["c1"][0]) in out and str(ids["c2"][0]) in out
    assert "cluster c2 is unavailable: domain c2 does not answer" in err  # stdout stays the table
    code, out, _ = run(api, api.admin, ["federation", "workflows", "--cluster", "c1", "--no-headers"], capsys)
    assert code == 0 and out.split()[0] == "c1"
    code, out, _ = run(api, api.admin, ["federation", "workflows", "--cluster", "c1", "-o", "yaml"], capsys)
    assert {w["cluster"] for w in yaml.safe_load(out)["workflows"]} == {"c1"}
    code, out, _ = run(api, api.admin, ["federation", "events", str(ids["c2"][0])], capsys)
    assert code == 0 and f"on cluster c2 (unavailable: {DOWN})" in out and "Workflow.Submitted" in out
    code, out, _ = run(api, api.admin, ["federation", "describe", str(ids["c1"][0])], capsys)
    assert code == 0 and "cluster: c1" in out and "main" in out
    code, _, err = run(api, api.admin, ["federation", "events", str(ids["c2"][0]), "--cluster", "c1"], capsys)
    assert code == 1 and "HTTP 404" in err and "widen --cluster" in err
    code, _, err = run(api, tenant, ["federation", "status"], capsys)
    assert code == 1 and "HTTP 403" in err

"""The federated read model over messages as the hub stores them (subject, headers, MessagePack state), decoded
as the hub reader decodes them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID

import pytest
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import Mapper

from adapters.federation import FederationStatus, MemberStatus
from adapters.hub_log import Arrivals
from adapters.jetstream.client import RawMsg
from adapters.jetstream.subjects import StreamNames, kind_of
from adapters.transcoder import MsgspecTranscoder
from domain.allocation import Allocation
from domain.fuzzfile import Resources, parse_fuzzfile
from domain.workflow import Workflow
from projections.federated import FederatedView, UnknownWorkflow, parse_clusters

T0 = datetime(2025, 1, 1, tzinfo=UTC)
FUZZFILE = "version: v4\njobs:\n  main: {image: {uri: docker://alpine:3.20}, script: 'true'}\n"
MAPPER = Mapper(transcoder=MsgspecTranscoder())
ARRIVALS = Arrivals()
OWNER = {"organization": "org", "group": "grp", "user": "alice"}


class Hub:
    """Messages as ROVING_FEDERATED holds them."""

    def __init__(self) -> None:
        self.seq = 0
        self.origin: dict[str, int] = {}

    def record(self, view: FederatedView, cluster: str, *aggregates: Aggregate) -> None:
        names = StreamNames(cluster)
        for aggregate in aggregates:
            for event in aggregate.collect_events():
                stored = MAPPER.to_stored_event(event)
                self.seq += 1
                self.origin[cluster] = self.origin.get(cluster, 0) + 1
                subject = names.subject("events", kind_of(stored.topic), stored.originator_id)
                headers = {"Roving-Topic": stored.topic, "Roving-Version": str(stored.originator_version),
                           "Nats-Stream-Source": f"{names.events}:abc {self.origin[cluster]} > > {subject} x"}
                assert feed(view, self.seq, subject, headers, stored.state)


def feed(view: FederatedView, seq: int, subject: str, headers: dict[str, str], data: bytes) -> int:
    """One hub message into the view, as the hub reader hands it on; how many events were new."""
    return view.apply(ARRIVALS([RawMsg(seq, subject, headers, data)]))


def workflow(number: int, finish: bool) -> Workflow:
    wf = Workflow.submit(UUID(int=number), f"wf-{number}", parse_fuzzfile(FUZZFILE).definition, OWNER,
                         by="alice", at=T0)
    wf.stage_started("main", 1, "n1", T0 + timedelta(minutes=1))
    if finish:
        wf.stage_exited("main", 1, 0, T0 + timedelta(minutes=2))
    return wf


def allocation(number: int, workflow_number: int) -> Allocation:
    a = Allocation.request(UUID(int=10_000 + number), UUID(int=workflow_number), "main", 1, Resources(),
                           by="scheduler", at=T0)
    a.mark_ready(by="scheduler", at=T0)
    return a


def member(cluster: str, available: bool) -> MemberStatus:
    return MemberStatus(cluster, cluster, StreamNames(cluster).events, reachable=available, sourcing=True, lag=0,
                        active_seconds=0.1, last_seen_seq=3, member_last_seq=3 if available else None,
                        error=None if available else "domain does not answer")


@pytest.fixture
def view() -> FederatedView:
    view, hub = FederatedView(), Hub()
    hub.record(view, "c1", workflow(1, finish=True), workflow(2, finish=False), allocation(1, 2))
    hub.record(view, "c2", workflow(3, finish=False), allocation(2, 3))
    return view


def test_parse_clusters_takes_repeats_and_commas() -> None:
    assert parse_clusters(None) is None and parse_clusters([]) is None
    assert parse_clusters(["c1,c2", " c3 ", "c1"]) == ["c1", "c2", "c3"]
    assert parse_clusters("c2") == ["c2"]


def test_workflows_and_statuses_per_cluster(view: FederatedView) -> None:
    rows = {(r["cluster"], r["name"]): r["status"] for r in view.workflows()}
    assert rows == {("c1", "wf-1"): "FINISHED", ("c1", "wf-2"): "STARTED", ("c2", "wf-3"): "STARTED"}
    assert [r["name"] for r in view.workflows("c2")] == ["wf-3"]
    counts = view.events_per_cluster()
    assert set(counts) == {"c1", "c2"} and all(n > 0 for n in counts.values())


def test_queue_stats_shows_a_down_member_unavailable_with_what_the_hub_holds(view: FederatedView) -> None:
    view.status = FederationStatus("nats://hub", "ROVING_FEDERATED", True, 10, [member("c1", True), member("c2", False)])
    stats = {s["cluster"]: s for s in view.queue_stats(["c1,c2", "c9"])}
    assert stats["c1"]["available"] is True and stats["c1"]["workflows"] == {"FINISHED": 1, "STARTED": 1}
    assert stats["c1"]["allocations"] == {"READY": 1}
    assert stats["c2"]["available"] is False and stats["c2"]["state"] == "unavailable"
    assert stats["c2"]["workflows"] == {"STARTED": 1} and stats["c2"]["events"] > 0
    assert stats["c9"]["available"] is False and "not a member" in stats["c9"]["error"]


def test_events_resolve_the_owning_cluster_by_workflow_id(view: FederatedView) -> None:
    answer = view.events(UUID(int=2))
    assert answer["cluster"] == "c1"
    types = [e["type"] for e in answer["events"]]
    assert types[0] == "Workflow.Submitted" and "Allocation.Requested" in types
    assert all(e["origin_seq"] for e in answer["events"])
    assert view.events(str(UUID(int=3)), clusters="c2")["cluster"] == "c2"
    with pytest.raises(UnknownWorkflow, match="widen --cluster"):
        view.events(UUID(int=3), clusters=["c1"])
    with pytest.raises(UnknownWorkflow):
        view.events("not-a-uuid")


def test_replayed_messages_are_skipped_and_tracking_is_not_an_event() -> None:
    view = FederatedView()
    assert not feed(view, 1, "roving.c1._tracking.app", {"Nats-Msg-Id": "x"}, b"1")
    assert not feed(view, 1, "roving.c1.ledger.abc", {"Roving-Topic": "x:Ledger.Opened", "Roving-Version": "1"}, b"")
    assert feed(view, 2, "roving.c1.ledger.abc", {"Roving-Topic": "x:Ledger.Opened", "Roving-Version": "1"}, b"")
    assert view.events_per_cluster() == {"c1": 1} and view.position == 2

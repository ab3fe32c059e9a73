"""Given a node's agent registering, reporting and lapsing, the node's status, epoch and placements follow."""

import pytest

from domain.holds import Effect, Source
from domain.node import LEASE_LAPSED, NodeError, NodeStatus, StaleAgent
from tests.unit.nodes.builders import at, capacity, peers, ready_node, registered_node


def test_a_registered_node_waits_for_its_agent_before_taking_work():
    node = registered_node()
    assert (node.status, node.epoch, node.accepts_new_work) == (NodeStatus.NOT_READY, 1, False)
    node.mark_ready(1, by="agent", at=at(1))
    assert node.status is NodeStatus.READY and node.accepts_new_work


def test_a_lapsed_lease_takes_the_node_offline_and_returns_the_work_lost_with_it():
    node = ready_node()
    assert node.go_offline(["a1", "a2"], by="lease-watch", at=at(5)) == ["a1", "a2"]
    assert (node.status, node.status_reason) == (NodeStatus.OFFLINE, LEASE_LAPSED)
    assert node.collect_events()[-1].lost == ["a1", "a2"]  # on record, for the node's history
    assert node.go_offline(["a1"], by="lease-watch", at=at(6)) == []


def test_an_offline_node_must_register_again_before_it_is_ready():
    node = ready_node()
    node.go_offline([], by="lease-watch", at=at(5))
    with pytest.raises(NodeError, match="OFFLINE; its agent must register again"):
        node.mark_ready(node.epoch, by="agent", at=at(6))


def test_a_heartbeat_for_an_offline_node_sends_its_agent_to_register_again():
    node = ready_node()
    node.check_heartbeat(node.epoch)
    node.go_offline([], by="lease-watch", at=at(5))
    with pytest.raises(StaleAgent, match="OFFLINE .*lease.*; its agent must register again"):
        node.check_heartbeat(node.epoch)


def test_rejoining_starts_a_new_epoch_that_fences_the_old_agent():
    node = ready_node()
    node.go_offline([], by="lease-watch", at=at(5))
    node.rejoin(capacity(), [], by="agent", at=at(6))
    assert node.epoch == 2
    with pytest.raises(StaleAgent, match="epoch 2; a report for epoch 1 is stale"):
        node.mark_ready(1, by="old-agent", at=at(7))
    node.mark_ready(2, by="agent", at=at(7))
    assert node.status is NodeStatus.READY


def test_a_node_held_for_repair_returns_held_after_going_offline_and_rejoining():
    node = ready_node()
    node.place_hold("repair", Effect.CORDON, Source.ADMIN, "replace GPU 3", by="alice", at=at(2))
    node.place_hold("xid", Effect.CORDON, Source.MONITORING, "XID 79", by="alertmanager", at=at(2), peers=peers(9, 0))
    node.place_hold("img", Effect.CORDON, Source.PROVISIONER, "reimaging", by="provisioner", at=at(2))
    node.go_offline([], by="lease-watch", at=at(3))
    node.rejoin(capacity(), [], by="agent", at=at(4))
    node.mark_ready(node.epoch, by="agent", at=at(5))
    assert sorted(node.holds) == ["repair", "xid"]
    assert not node.accepts_new_work


def test_a_rejoin_without_going_offline_returns_the_allocations_the_old_agent_ran():
    node = ready_node()
    assert node.rejoin(capacity(cpu=16), ["a1"], by="agent", at=at(4)) == ["a1"]
    assert node.capacity.cpu == 16 and node.status is NodeStatus.NOT_READY


def test_a_not_ready_report_stops_new_work_with_its_reason():
    node = ready_node()
    node.mark_not_ready(1, "disk full", by="agent", at=at(2))
    assert "NOT_READY (disk full)" in (node.placement_refusal() or "")


def test_work_placed_before_the_agent_registered_again_is_stray_and_work_placed_after_is_not():
    node = ready_node()
    node.rejoin(capacity(), [], by="agent", at=at(3))
    node.mark_ready(2, by="agent", at=at(4))
    assert node.stray_refusal(1) == "node n1 rejoined (epoch 2) after the placement (epoch 1)"
    assert node.stray_refusal(2) is None
    assert node.stray_refusal(None) is None  # a placement from an older log names no epoch


def test_work_on_an_offline_node_is_stray():
    node = ready_node()
    node.go_offline([], by="lease-watch", at=at(3))
    assert node.stray_refusal(1) == "node n1 is OFFLINE (lease lapsed)"


@pytest.mark.parametrize(("fields", "message"), [
    ({"cpu": 0}, "at least 1 cpu"),
    ({"devices": {"gpu": -1}}, "negative count for devices gpu"),
    ({"agent_port": 70000}, "agent port 70000 is not between 1 and 65535"),
])
def test_a_registration_with_impossible_capacity_is_refused(fields, message):
    with pytest.raises(NodeError, match=message):
        registered_node(**fields)


def test_a_nodes_history_replays_through_the_stored_format_to_the_same_node():
    from eventsourcing.persistence import Mapper

    from adapters.transcoder import MsgspecTranscoder

    node = ready_node()
    node.place_hold("h1", Effect.DEPROVISION, Source.ADMIN, "retire", by="alice", at=at(3), evict=True)
    node.go_offline([], by="lease-watch", at=at(4))
    node.rejoin(capacity(devices={"gpu": 2}), ["a1"], by="agent", at=at(5))
    mapper = Mapper(transcoder=MsgspecTranscoder())
    replayed = None
    for stored in [mapper.to_stored_event(e) for e in node.collect_events()]:
        replayed = mapper.to_domain_event(stored).mutate(replayed)
    assert (replayed.holds, replayed.capacity, replayed.epoch, replayed.status) == (
        node.holds, node.capacity, 2, NodeStatus.NOT_READY)
    assert replayed.modified_on == at(5)


def test_an_older_nodes_history_with_placements_and_releases_replays_to_the_same_node():
    from eventsourcing.persistence import Mapper

    from adapters.transcoder import MsgspecTranscoder
    from domain.node import Placement

    node = ready_node()
    # what nodes recorded before issue 43, as older logs hold it
    node._allocation_placed(placement=Placement(id="a1", cpu=2, memory=2**30), by="scheduler", at=at(2))
    node.place_hold("h1", Effect.CORDON, Source.ADMIN, "bios", by="alice", at=at(3))
    node._allocation_released(allocation_id="a1", by="agent", at=at(4))
    events = node.collect_events()
    assert [type(e).__name__ for e in events][-3:] == ["AllocationPlaced", "HoldPlaced", "AllocationReleased"]
    mapper = Mapper(transcoder=MsgspecTranscoder())
    replayed = None
    for stored in [mapper.to_stored_event(e) for e in events]:
        replayed = mapper.to_domain_event(stored).mutate(replayed)
    assert (replayed.status, list(replayed.holds), replayed.epoch, replayed.version) == (
        NodeStatus.READY, ["h1"], 1, node.version)

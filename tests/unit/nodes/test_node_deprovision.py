"""Given a node to deprovision, it takes no new work and goes once empty, at once with force."""

import pytest

from domain.holds import Effect, Source
from domain.node import NodeError
from tests.unit.nodes.builders import at, capacity, ready_node


def test_deprovision_waits_until_the_last_allocation_leaves():
    node = ready_node()
    assert node.deprovision("d1", Source.PROVISIONER, "scale down", ["a1", "a2"], by="provisioner", at=at(3)) == []
    assert not node.deprovision_emptied(["a2"], by="agent", at=at(4))
    assert not node.removed
    assert node.deprovision_emptied([], by="agent", at=at(5))
    assert node.removed
    assert type(node.collect_events()[-1]).__name__ == "NodeDeprovisioned"


def test_a_node_waiting_to_be_deprovisioned_takes_no_new_work():
    node = ready_node()
    node.deprovision("d1", Source.PROVISIONER, "scale down", ["a1"], by="provisioner", at=at(3))
    assert "deprovision hold d1" in (node.placement_refusal() or "")


def test_deprovision_with_evict_takes_running_work_off_first():
    node = ready_node()
    assert node.deprovision("d1", Source.ADMIN, "retire", ["a1"], by="alice", at=at(3), evict=True) == ["a1"]
    assert node.allocations_to_evict(["a1"]) == ["a1"]
    assert node.deprovision_emptied([], by="agent", at=at(4))
    assert node.removed


def test_forced_deprovision_removes_the_node_at_once_and_returns_its_lost_work():
    node = ready_node()
    assert node.deprovision("d1", Source.ADMIN, "retire", ["a1"], by="alice", at=at(3), force=True) == ["a1"]
    assert node.removed and node.stray_refusal(1) == "node n1 was removed"


def test_deprovisioning_an_empty_node_removes_it_at_once():
    node = ready_node()
    node.deprovision("d1", Source.PROVISIONER, "scale down", [], by="provisioner", at=at(3))
    assert node.removed


def test_a_node_without_a_deprovision_hold_is_not_deprovisioned_when_its_work_ends():
    node = ready_node()
    assert not node.deprovision_emptied([], by="agent", at=at(3))
    assert not node.removed


def test_an_online_node_is_removed_only_with_force():
    node = ready_node()
    with pytest.raises(NodeError, match="n1 is READY; only an OFFLINE node is removed without force"):
        node.remove(["a1"], by="alice", at=at(3))
    assert node.remove(["a1"], by="alice", at=at(3), force=True) == ["a1"]
    assert node.removed


def test_an_offline_node_is_removed_without_force():
    node = ready_node()
    node.go_offline([], by="lease-watch", at=at(3))
    node.remove([], by="alice", at=at(4))
    assert node.removed and not node.accepts_new_work


def test_a_removed_node_refuses_further_commands():
    node = ready_node()
    node.remove([], by="alice", at=at(3), force=True)
    with pytest.raises(NodeError, match="n1 was removed; its agent may register it again under its name"):
        node.place_hold("h1", Effect.CORDON, Source.ADMIN, "x", by="alice", at=at(4))


def test_removing_a_node_releases_its_holds_on_record():
    node = ready_node()
    node.place_hold("h1", Effect.CORDON, Source.ADMIN, "bios", by="alice", at=at(2))
    node.collect_events()
    node.remove([], by="alice", at=at(3), force=True)
    assert node.holds == {}
    assert [type(e).__name__ for e in node.collect_events()] == ["HoldReleased", "NodeRemoved"]


def test_a_removed_node_registers_again_under_its_name_with_a_new_epoch_and_no_past_holds():
    node = ready_node()
    node.deprovision("d1", Source.ADMIN, "retire", [], by="alice", at=at(3))
    assert node.removed and "d1" in node.holds
    assert node.rejoin(capacity(cpu=4), [], by="agent", at=at(5)) == []
    node.mark_ready(node.epoch, by="agent", at=at(5))
    assert (node.removed, node.epoch, node.holds, node.capacity.cpu) == (False, 2, {}, 4)
    assert node.accepts_new_work

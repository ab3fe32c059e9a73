"""Given a node with holds, each hold stops new work, acts by its effect, and is released only by its source's rules."""

import pytest

from domain.holds import Effect, HoldError, ReleaseRefused, Source, UnknownHold, source_of
from tests.unit.nodes.builders import at, peers, ready_node

FEW_HELD = peers(total=9, held=0)


def test_uncordon_keeps_the_monitoring_hold():
    node = ready_node()
    node.place_hold("h1", Effect.CORDON, Source.MONITORING, "ECC errors", by="alertmanager", at=at(2), peers=FEW_HELD)
    node.place_hold("h2", Effect.CORDON, Source.ADMIN, "bios update", by="alice", at=at(2))
    assert node.release_admin_cordons(by="alice", at=at(3)) == ["h2"]
    assert list(node.holds) == ["h1"]
    assert not node.accepts_new_work


def test_uncordon_leaves_provisioner_holds_and_admin_evictions_alone():
    node = ready_node()
    node.place_hold("p1", Effect.CORDON, Source.PROVISIONER, "reimaging", by="provisioner", at=at(2))
    node.place_hold("e1", Effect.EVICT, Source.ADMIN, "drain for rack move", by="alice", at=at(2))
    assert node.release_admin_cordons(by="alice", at=at(3)) == []
    assert sorted(node.holds) == ["e1", "p1"]


def test_uncordon_of_the_last_admin_cordon_lets_work_in_again():
    node = ready_node()
    node.place_hold("h1", Effect.CORDON, Source.ADMIN, "bios update", by="alice", at=at(2))
    node.release_admin_cordons(by="alice", at=at(3))
    assert node.accepts_new_work


@pytest.mark.parametrize("effect", list(Effect))
def test_a_held_node_refuses_new_work_and_says_which_hold(effect):
    node = ready_node()
    node.place_hold("h1", effect, Source.ADMIN, "bios update", by="alice", at=at(2))
    assert not node.accepts_new_work
    assert f"{effect.value} hold h1 by admin: bios update" in (node.placement_refusal() or "")


def test_an_admin_may_not_release_monitoring_evidence_without_force():
    node = ready_node()
    node.place_hold("m1", Effect.CORDON, Source.MONITORING, "ECC errors", by="alertmanager", at=at(2), peers=FEW_HELD)
    with pytest.raises(ReleaseRefused, match="released when the alert resolves, or by an admin with force"):
        node.release_hold("m1", by="alice", at=at(3), releaser_source=Source.ADMIN)
    assert "m1" in node.holds


def test_an_admin_releases_monitoring_evidence_when_forced():
    node = ready_node()
    node.place_hold("m1", Effect.CORDON, Source.MONITORING, "ECC errors", by="alertmanager", at=at(2), peers=FEW_HELD)
    node.release_hold("m1", by="alice", at=at(3), releaser_source=Source.ADMIN, force=True)
    assert node.holds == {}


def test_monitoring_releases_its_own_hold():
    node = ready_node()
    node.place_hold("m1", Effect.CORDON, Source.MONITORING, "ECC errors", by="alertmanager", at=at(2), peers=FEW_HELD)
    node.release_hold("m1", by="alertmanager", at=at(3), releaser_source=Source.MONITORING)
    assert node.accepts_new_work


@pytest.mark.parametrize("releaser", [Source.MONITORING, Source.PROVISIONER])
def test_only_an_admin_releases_an_admin_hold(releaser):
    node = ready_node()
    node.place_hold("h1", Effect.CORDON, Source.ADMIN, "bios update", by="alice", at=at(2))
    with pytest.raises(ReleaseRefused, match="only an admin may release it"):
        node.release_hold("h1", by="robot", at=at(3), releaser_source=releaser, force=True)


@pytest.mark.parametrize("releaser", [Source.ADMIN, Source.MONITORING])
def test_only_the_provisioner_releases_a_provisioner_hold_even_with_force(releaser):
    node = ready_node()
    node.place_hold("p1", Effect.CORDON, Source.PROVISIONER, "reimaging", by="provisioner", at=at(2))
    with pytest.raises(ReleaseRefused, match="only the provisioner may release it"):
        node.release_hold("p1", by="someone", at=at(3), releaser_source=releaser, force=True)
    node.release_hold("p1", by="provisioner", at=at(3), releaser_source=Source.PROVISIONER)
    assert node.holds == {}


def test_placing_the_same_hold_again_records_it_once():
    node = ready_node()
    node.collect_events()
    for minute in (2, 3):
        node.place_hold("h1", Effect.CORDON, Source.ADMIN, "bios update", by="alice", at=at(minute))
    assert [type(e).__name__ for e in node.collect_events()] == ["HoldPlaced"]
    assert node.holds["h1"].at == at(2)


def test_a_hold_id_cannot_be_reused_for_another_kind_of_hold():
    node = ready_node()
    node.place_hold("h1", Effect.CORDON, Source.ADMIN, "bios update", by="alice", at=at(2))
    with pytest.raises(HoldError, match="already exists as a admin cordon hold"):
        node.place_hold("h1", Effect.EVICT, Source.ADMIN, "bios update", by="alice", at=at(3))


def test_releasing_a_hold_the_node_does_not_have_names_it():
    with pytest.raises(UnknownHold, match="n1 has no hold h9"):
        ready_node().release_hold("h9", by="alice", at=at(3), releaser_source=Source.ADMIN)


def test_the_hold_records_who_placed_it_when_and_why():
    node = ready_node()
    hold = node.place_hold("h1", Effect.CORDON, Source.ADMIN, "bios update", by="alice", at=at(2))
    assert (hold.by, hold.at, hold.reason, hold.source) == ("alice", at(2), "bios update", Source.ADMIN)


def test_a_cordon_leaves_running_work_in_place():
    node = ready_node()
    node.place_hold("h1", Effect.CORDON, Source.ADMIN, "bios update", by="alice", at=at(3))
    assert node.allocations_to_evict(["a1"]) == []
    assert node.stray_refusal(1) is None


def test_evict_returns_the_running_allocations_to_take_off():
    node = ready_node()
    assert node.evict("e1", Source.ADMIN, "bad DIMM", ["a1", "a2"], by="alice", at=at(3)) == ["a1", "a2"]
    assert node.stray_refusal(1) == "node n1 is under an evict hold"  # work placed as the hold landed goes too
    assert node.holds["e1"].effect is Effect.EVICT
    assert not node.accepts_new_work


def test_the_callers_role_decides_the_hold_source():
    assert [source_of(r) for r in ("admin", "monitoring", "provisioner")] == [Source.ADMIN, Source.MONITORING,
                                                                             Source.PROVISIONER]
    with pytest.raises(HoldError, match="role 'user' may not place or release node holds"):
        source_of("user")


def test_only_admins_monitoring_and_provisioners_place_holds():
    node = ready_node()
    with pytest.raises(HoldError, match="not by the agent token"):
        node.place_hold("h1", Effect.CORDON, Source.AGENT, "x", by="agent", at=at(2))
    assert node.holds == {} and node.accepts_new_work

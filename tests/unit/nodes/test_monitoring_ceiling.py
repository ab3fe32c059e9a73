"""Given nodeHealth.maxMonitoringHeldPercent, monitoring may hold only that share of a definition's nodes."""

from domain.holds import Effect, NodeSummary, Source, monitoring_hold_allowed
from tests.unit.nodes.builders import at, peers, ready_node


def test_the_ceiling_refuses_the_21st_percent():
    allowed, reason = monitoring_hold_allowed(peers(99, held=20), "n1", 20)
    assert not allowed
    assert reason == ("monitoring already holds 20 of 100 nodes in this definition; holding n1 too would make 21%, "
                      "above nodeHealth.maxMonitoringHeldPercent (20%)")


def test_the_ceiling_allows_up_to_the_20th_percent():
    assert monitoring_hold_allowed(peers(99, held=19), "n1", 20)[0]


def test_a_node_already_held_by_monitoring_does_not_count_twice():
    definition = peers(99, held=20) + [NodeSummary(id="n1", monitoring_held=True)]
    assert monitoring_hold_allowed(definition, "n1", 20)[0]


def test_the_ceiling_follows_the_configured_percent():
    assert monitoring_hold_allowed(peers(3, held=1), "n1", 50)[0]
    assert not monitoring_hold_allowed(peers(3, held=2), "n1", 50)[0]


def test_a_refused_monitoring_hold_is_recorded_with_its_reason_and_places_no_hold():
    node = ready_node()
    hold = node.place_hold("m1", Effect.CORDON, Source.MONITORING, "ECC errors", by="alertmanager", at=at(2),
                           peers=peers(9, held=2), max_monitoring_percent=20)
    assert hold is None and node.holds == {} and node.accepts_new_work
    refused = node.collect_events()[-1]
    assert type(refused).__name__ == "MonitoringHoldRefused"
    assert refused.refusal.startswith("monitoring already holds 2 of 10 nodes")
    assert (refused.hold_id, refused.hold_reason) == ("m1", "ECC errors")


def test_admin_holds_do_not_count_against_the_monitoring_ceiling():
    node = ready_node()
    node.place_hold("h1", Effect.CORDON, Source.ADMIN, "bios update", by="alice", at=at(2))
    assert node.summary().monitoring_held is False


def test_admins_and_the_provisioner_are_not_limited_by_the_ceiling():
    node = ready_node()
    node.place_hold("h1", Effect.CORDON, Source.ADMIN, "bios update", by="alice", at=at(2), peers=peers(4, held=4))
    assert "h1" in node.holds


def test_a_two_node_pool_at_the_default_ceiling_says_why_monitoring_may_hold_neither():
    allowed, reason = monitoring_hold_allowed(peers(1, held=0), "n1")
    assert not allowed
    assert reason == ("monitoring already holds 0 of 2 nodes in this definition; holding n1 too would make 50%, "
                      "above nodeHealth.maxMonitoringHeldPercent (20%); with 2 nodes in this definition that ceiling "
                      "allows no monitoring hold at all (raise it to 50 or more to allow one)")

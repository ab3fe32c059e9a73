"""Given nodeHealth.maxMonitoringHeldPercent, monitoring may hold only that share of a definition's nodes (at least one
from two nodes), and a hold the ceiling refused is placed once there is room, unless its alert resolved first."""

import pytest

from domain.alerts import ReleaseMonitoringHold, apply_alert, retry_refused
from domain.holds import Effect, NodeSummary, Source, monitoring_hold_allowed, monitoring_hold_limit
from tests.unit.nodes.builders import at, peers, ready_node


def test_the_ceiling_refuses_the_21st_percent():
    allowed, reason = monitoring_hold_allowed(peers(99, held=20), "n1", 20)
    assert not allowed
    assert reason == ("monitoring already holds 20 of 100 nodes in this definition; holding n1 too would pass its "
                      "limit of 20 (nodeHealth.maxMonitoringHeldPercent 20% of 100, at least one from two nodes)")


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


@pytest.mark.parametrize(("members", "percent", "limit"), [
    (1, 20, 0), (1, 100, 1), (2, 20, 1), (9, 20, 1), (10, 20, 2), (14, 20, 2), (15, 20, 3), (100, 20, 20),
    (2, 0, 0), (4, 50, 2), (3, 100, 3)])
def test_the_limit_is_the_percent_rounded_down_and_at_least_one_from_two_nodes(members, percent, limit):
    assert monitoring_hold_limit(members, percent) == limit


def test_a_two_node_pool_at_the_default_ceiling_lets_monitoring_hold_one_node():
    assert monitoring_hold_allowed(peers(1, held=0), "n1")[0]
    allowed, reason = monitoring_hold_allowed(peers(1, held=1), "n1")
    assert not allowed and "limit of 1" in reason


def test_a_one_node_definition_says_monitoring_holds_it_only_at_100_percent():
    allowed, reason = monitoring_hold_allowed([], "n1")
    assert not allowed
    assert reason.endswith("; a one-node definition is held by monitoring only at 100%")


def refused_node():
    node = ready_node()
    node.place_hold("m1", Effect.CORDON, Source.MONITORING, "disk errors", by="alertmanager", at=at(2),
                    peers=peers(1, held=1))
    assert node.holds == {} and list(node.refused_holds) == ["m1"]
    return node


def test_a_refused_hold_is_placed_once_the_ceiling_is_raised():
    node = refused_node()
    assert retry_refused(node, peers=peers(1, held=1), at=at(3)) == []  # still no room: nothing new on record
    assert type(node.collect_events()[-1]).__name__ == "MonitoringHoldRefused"
    assert retry_refused(node, peers=peers(1, held=1), at=at(4), max_monitoring_percent=100) == ["m1"]
    hold = node.holds["m1"]
    assert (hold.source, hold.reason, hold.by, hold.at) == (Source.MONITORING, "disk errors", "alertmanager", at(4))
    assert node.refused_holds == {}


def test_a_refused_hold_is_placed_once_the_other_node_is_released():
    node = refused_node()
    assert retry_refused(node, peers=peers(1, held=0), at=at(5)) == ["m1"]


def test_a_refused_hold_whose_alert_resolved_is_never_placed():
    node = refused_node()
    resolved = ReleaseMonitoringHold(node="n1", hold_id="m1", fingerprint="f", ended_at=at(3))
    assert apply_alert(node, resolved, by="alertmanager", at=at(3)).startswith("withdrawn")
    assert node.refused_holds == {}
    assert retry_refused(node, peers=peers(1, held=0), at=at(4), max_monitoring_percent=100) == []


def test_a_refusal_alertmanager_stopped_repeating_is_not_placed():
    node = refused_node()
    assert retry_refused(node, peers=peers(1, held=0), at=at(2 + 121)) == []

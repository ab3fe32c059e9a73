"""Given Alertmanager webhooks, firing alerts place monitoring holds and resolved alerts release them."""

import json

import pytest

from domain.alerts import (
    AlertPayloadError,
    AwaitAdminRelease,
    PlaceMonitoringHold,
    ReleaseMonitoringHold,
    apply_alert,
    hold_id_for,
    parse_webhook,
)
from domain.holds import Effect, Source
from tests.unit.nodes.builders import at, peers, ready_node

ROOM = peers(9, held=0)


def alert(status="firing", fingerprint="f00d", **labels) -> dict:
    labels = {"alertname": "GpuXid", "fb_action": "cordon", "node": "n1", **labels}
    return {"status": status, "labels": {k: v for k, v in labels.items() if v is not None},
            "annotations": {"summary": "XID 79 on GPU 3"}, "fingerprint": fingerprint,
            "startsAt": "2025-01-01T00:00:00.123456789Z", "endsAt": "0001-01-01T00:00:00Z"}


def webhook(*alerts, status="firing") -> bytes:
    return json.dumps({"version": "4", "status": status, "receiver": "roving", "alerts": list(alerts)}).encode()


def test_a_firing_then_resolved_alert_places_and_releases_the_monitoring_hold():
    node = ready_node()
    [place] = parse_webhook(webhook(alert()))
    assert apply_alert(node, place, by="alertmanager", at=at(2), peers=ROOM) == "placed"
    hold = node.holds[place.hold_id]
    assert (hold.source, hold.effect, hold.reason) == (Source.MONITORING, Effect.CORDON, "XID 79 on GPU 3")
    assert not node.accepts_new_work
    [release] = parse_webhook(webhook(alert(status="resolved"), status="resolved"))
    assert isinstance(release, ReleaseMonitoringHold) and release.hold_id == place.hold_id
    assert apply_alert(node, release, by="alertmanager", at=at(9)) == "released"
    assert node.holds == {} and node.accepts_new_work


def test_repeated_notifications_of_the_same_alert_change_nothing():
    node = ready_node()
    [place] = parse_webhook(webhook(alert()))
    apply_alert(node, place, by="alertmanager", at=at(2), peers=ROOM)
    node.collect_events()
    assert apply_alert(node, place, by="alertmanager", at=at(7), peers=ROOM) == "already held"
    [release] = parse_webhook(webhook(alert(status="resolved"), status="resolved"))
    apply_alert(node, release, by="alertmanager", at=at(9))
    assert apply_alert(node, release, by="alertmanager", at=at(10)) == "already released"
    assert [type(e).__name__ for e in node.collect_events()] == ["HoldReleased"]


def test_an_alert_marked_for_admin_release_keeps_its_hold_after_resolving():
    node = ready_node()
    [place] = parse_webhook(webhook(alert(fb_release="admin")))
    apply_alert(node, place, by="alertmanager", at=at(2), peers=ROOM)
    [keep] = parse_webhook(webhook(alert(status="resolved", fb_release="admin"), status="resolved"))
    assert isinstance(keep, AwaitAdminRelease)
    assert apply_alert(node, keep, by="alertmanager", at=at(9)).startswith("kept")
    node.release_hold(keep.hold_id, by="alice", at=at(10), releaser_source=Source.ADMIN, force=True)
    assert node.accepts_new_work


def test_an_alert_over_the_ceiling_is_refused_visibly():
    node = ready_node()
    [place] = parse_webhook(webhook(alert(fb_action="evict")))
    outcome = apply_alert(node, place, by="alertmanager", at=at(2), peers=peers(4, held=1))
    assert outcome.startswith("refused: monitoring already holds 1 of 5 nodes")
    assert node.holds == {}


def test_the_hold_id_follows_the_alert_and_the_node():
    commands = parse_webhook(webhook(alert(node="n1"), alert(node="n2"), alert(node="n1", fingerprint="beef")))
    assert [c.hold_id for c in commands] == [hold_id_for("f00d", "n1"), hold_id_for("f00d", "n2"), hold_id_for("beef", "n1")]
    assert len({c.hold_id for c in commands}) == 3
    assert parse_webhook(webhook(alert()))[0].hold_id == commands[0].hold_id


def test_a_firing_alert_carries_its_action_node_and_start():
    [place] = parse_webhook(webhook(alert(fb_action="deprovision", node="gpu-17")))
    assert isinstance(place, PlaceMonitoringHold)
    assert (place.node, place.effect) == ("gpu-17", Effect.DEPROVISION)
    assert place.started_at.isoformat() == "2025-01-01T00:00:00.123457+00:00"


def test_without_a_summary_the_reason_is_the_alert_name():
    body = alert()
    del body["annotations"]
    assert parse_webhook(webhook(body))[0].reason == "GpuXid"


def test_alerts_without_fb_action_are_not_ours():
    assert parse_webhook(webhook(alert(fb_action=None), alert(status="resolved", fb_action=None))) == []


@pytest.mark.parametrize(("broken", "problem"), [
    (alert(node=None), "alerts[2].labels.node: required when fb_action is set"),
    (alert(fb_action="drain"), "alerts[2].labels.fb_action: must be one of cordon, evict, deprovision (got 'drain')"),
    (alert(fb_release="never"), "alerts[2].labels.fb_release: must be admin or alert (got 'never')"),
    ({**alert(), "status": "pending"}, "alerts[2].status: must be firing or resolved (got 'pending')"),
    ({**alert(), "startsAt": "yesterday"}, "alerts[2].startsAt: must be an RFC 3339 time (got 'yesterday')"),
    ({**alert(), "fingerprint": ""}, "alerts[2].fingerprint: must be a non-empty string"),
    ({**alert(), "labels": {"node": 3}}, "alerts[2].labels.node: must be a string (got int)"),
    ("oops", "alerts[2]: must be an object"),
])
def test_an_invalid_alert_is_named_by_its_path(broken, problem):
    with pytest.raises(AlertPayloadError) as error:
        parse_webhook(webhook(alert(), alert(), broken))
    assert error.value.problems == [problem]


def test_every_problem_of_a_payload_is_reported_at_once():
    payload = json.dumps({"version": "3", "status": "firing", "alerts": [alert(node=None), alert(fb_action="x")]})
    with pytest.raises(AlertPayloadError) as error:
        parse_webhook(payload)
    assert error.value.problems == [
        "version: must be \"4\" (got '3')",
        "alerts[0].labels.node: required when fb_action is set",
        "alerts[1].labels.fb_action: must be one of cordon, evict, deprovision (got 'x')",
    ]


@pytest.mark.parametrize(("body", "problem"), [
    (b"{not json", "body: not valid JSON"),
    (b"[]", "body: must be a JSON object"),
    (json.dumps({"version": "4", "status": "firing"}).encode(), "alerts: must be a list of alerts"),
])
def test_a_body_that_is_not_a_webhook_says_so(body, problem):
    with pytest.raises(AlertPayloadError, match=problem.replace("(", r"\(")):
        parse_webhook(body)


def test_a_huge_alert_summary_still_holds_the_node_with_its_reason_cut():
    """Issue 39: the summary is stored in the hold's event and quoted in every blocked cause."""
    body = alert()
    body["annotations"]["summary"] = "XID 79 " + "x" * 2_000_000
    [place] = parse_webhook(webhook(body))
    assert isinstance(place, PlaceMonitoringHold) and place.reason.startswith("XID 79 ") and len(place.reason) == 1_024


def test_a_fingerprint_past_its_bound_is_named():
    with pytest.raises(AlertPayloadError) as refused:
        parse_webhook(webhook(alert(fingerprint="f" * 100_000)))
    assert "alerts[0].fingerprint" in str(refused.value)

"""Alertmanager webhook payloads (version 4) turned into monitoring hold commands, and applied to a node.

A firing alert labelled `fb_action` (cordon | evict | deprovision) and `node` places a monitoring hold whose
id comes from the alert's fingerprint and node, so Alertmanager's repeated notifications place it once.
A resolved alert releases that hold, unless the alert is labelled `fb_release: admin` (then an admin
releases it, with force). Alerts without `fb_action` are not ours and are skipped. A hold the ceiling refused
waits on its node (`refused_holds`) until `retry_refused` finds room or the alert resolves.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import msgspec

from domain.holds import (
    DEFAULT_MAX_MONITORING_HELD_PERCENT,
    REFUSAL_FRESH_FOR,
    Effect,
    NodeSummary,
    monitoring_hold_allowed,
)
from domain.node import Node
from domain.tenancy.common import Source

ACTIONS = {e.value: e for e in Effect}
STATUSES = ("firing", "resolved")
RELEASES = ("admin", "alert")
REFUSED = "refused: "  # how an outcome of `apply_alert` starts when the monitoring ceiling refused the hold

# A hold's reason is stored in its event and quoted in blocked causes: an alert's summary is cut, not refused (the
# node must still be held); Alertmanager's fingerprints are 16 hex digits.
MAX_ALERT_REASON = 1_024
MAX_FINGERPRINT = 256


class AlertPayloadError(ValueError):
    """The webhook body is not a valid Alertmanager v4 payload; `problems` name each bad field by path."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


class PlaceMonitoringHold(msgspec.Struct, frozen=True, kw_only=True):
    node: str
    hold_id: str
    effect: Effect
    reason: str
    fingerprint: str
    started_at: datetime


class ReleaseMonitoringHold(msgspec.Struct, frozen=True, kw_only=True):
    node: str
    hold_id: str
    fingerprint: str
    ended_at: datetime | None


class AwaitAdminRelease(msgspec.Struct, frozen=True, kw_only=True):
    """The alert resolved, but its label `fb_release: admin` keeps the hold until an admin releases it."""

    node: str
    hold_id: str
    fingerprint: str


AlertCommand = PlaceMonitoringHold | ReleaseMonitoringHold | AwaitAdminRelease


def hold_id_for(fingerprint: str, node: str) -> str:
    """The same alert on the same node always names the same hold."""
    return "alert-" + hashlib.sha256(f"{fingerprint}/{node}".encode()).hexdigest()[:16]


def parse_webhook(payload: bytes | str | Mapping[str, Any]) -> list[AlertCommand]:
    """Every hold command in the payload, in alert order; raises AlertPayloadError listing every problem."""
    problems: list[str] = []
    commands: list[AlertCommand] = []
    body = _decode(payload, problems)
    if isinstance(body, Mapping):
        _expect(body.get("version") == "4", "version", f"must be \"4\" (got {body.get('version')!r})", problems)
        _expect(body.get("status") in STATUSES, "status", f"must be firing or resolved (got {body.get('status')!r})", problems)
        alerts = body.get("alerts")
        _expect(isinstance(alerts, list), "alerts", "must be a list of alerts", problems)
        listed = alerts if isinstance(alerts, list) else []
        commands = [c for i, a in enumerate(listed) if (c := _alert(a, f"alerts[{i}]", problems))]
    if problems:
        raise AlertPayloadError(problems)
    return commands


def apply_alert(
    node: Node, command: AlertCommand, *, by: str, at: datetime, peers: list[NodeSummary] | None = None,
    max_monitoring_percent: float = DEFAULT_MAX_MONITORING_HELD_PERCENT,
) -> str:
    """Carry one command out on its node (resent notifications change nothing); returns what happened."""
    if isinstance(command, PlaceMonitoringHold):
        if command.hold_id in node.holds:
            return "already held"
        hold = node.place_hold(command.hold_id, command.effect, Source.MONITORING, command.reason, by=by, at=at,
                               peers=peers, max_monitoring_percent=max_monitoring_percent)
        return "placed" if hold else f"{REFUSED}{node.last_refusal}"
    if command.hold_id not in node.holds:
        if command.hold_id in node.refused_holds:
            node.withdraw_refusal(command.hold_id, by=by, at=at)
            return "withdrawn: the ceiling had refused its hold, which will not be placed now"
        return "already released"
    if isinstance(command, AwaitAdminRelease):
        return ("kept: fb_release is admin, so an admin releases it with force "
                "(roving node hold release NODE HOLD --force)")
    node.release_hold(command.hold_id, by=by, at=at, releaser_source=Source.MONITORING)
    return "released"


def retry_refused(
    node: Node, *, peers: list[NodeSummary], at: datetime,
    max_monitoring_percent: float = DEFAULT_MAX_MONITORING_HELD_PERCENT,
) -> list[str]:
    """Place the holds the ceiling refused on `node` while their alerts still fire, now that the ceiling or the node
    set allows it: Alertmanager would resend them only after its repeat interval (an hour). Returns the holds placed;
    one the ceiling still refuses stays waiting, with no new refusal on record."""
    placed = []
    for refused in list(node.refused_holds.values()):
        if at - refused.at > REFUSAL_FRESH_FOR:
            continue  # its alert stopped repeating without a resolution reaching us: it has ended
        if not monitoring_hold_allowed([*peers, node.summary()], str(node.id), max_monitoring_percent)[0]:
            break
        node.place_hold(refused.id, refused.effect, Source.MONITORING, refused.reason, by=refused.by, at=at,
                        peers=peers, max_monitoring_percent=max_monitoring_percent)
        placed.append(refused.id)
    return placed


def _decode(payload: bytes | str | Mapping[str, Any], problems: list[str]) -> Any:
    if isinstance(payload, Mapping):
        return payload
    try:
        body = msgspec.json.decode(payload)
    except msgspec.DecodeError as error:
        problems.append(f"body: not valid JSON ({error})")
        return None
    _expect(isinstance(body, Mapping), "body", "must be a JSON object", problems)
    return body


def _alert(alert: Any, path: str, problems: list[str]) -> AlertCommand | None:
    if not isinstance(alert, Mapping):
        problems.append(f"{path}: must be an object")
        return None
    before = len(problems)
    status = alert.get("status")
    _expect(status in STATUSES, f"{path}.status", f"must be firing or resolved (got {status!r})", problems)
    labels = _strings(alert.get("labels"), f"{path}.labels", problems, required=True)
    annotations = _strings(alert.get("annotations", {}), f"{path}.annotations", problems, required=False)
    fingerprint = alert.get("fingerprint")
    _expect(isinstance(fingerprint, str) and bool(fingerprint), f"{path}.fingerprint", "must be a non-empty string", problems)
    _expect(not isinstance(fingerprint, str) or len(fingerprint) <= MAX_FINGERPRINT, f"{path}.fingerprint",
            f"must be at most {MAX_FINGERPRINT} characters", problems)
    starts = _time(alert.get("startsAt"), f"{path}.startsAt", problems, required=True)
    ends = _time(alert.get("endsAt"), f"{path}.endsAt", problems, required=False)
    action, node, release = _our_labels(labels, f"{path}.labels", problems)
    if len(problems) > before or action is None or not isinstance(fingerprint, str) or starts is None:
        return None  # (a bad fingerprint or start is among the problems)
    hold_id = hold_id_for(fingerprint, node)
    if status == "firing":
        reason = (annotations.get("summary") or labels.get("alertname") or f"alert {fingerprint}")[:MAX_ALERT_REASON]
        return PlaceMonitoringHold(node=node, hold_id=hold_id, effect=action, reason=reason,
                                   fingerprint=fingerprint, started_at=starts)
    if release == "admin":
        return AwaitAdminRelease(node=node, hold_id=hold_id, fingerprint=fingerprint)
    return ReleaseMonitoringHold(node=node, hold_id=hold_id, fingerprint=fingerprint, ended_at=ends)


def _our_labels(labels: dict[str, str], path: str, problems: list[str]) -> tuple[Effect | None, str, str]:
    action = labels.get("fb_action")
    if action is None:
        return None, "", ""
    _expect(action in ACTIONS, f"{path}.fb_action", f"must be one of {', '.join(ACTIONS)} (got {action!r})", problems)
    node = labels.get("node", "")
    _expect(bool(node), f"{path}.node", "required when fb_action is set", problems)
    release = labels.get("fb_release", "alert")
    _expect(release in RELEASES, f"{path}.fb_release", f"must be admin or alert (got {release!r})", problems)
    return ACTIONS.get(action), node, release


def _strings(value: Any, path: str, problems: list[str], required: bool) -> dict[str, str]:
    if value is None and not required:
        return {}
    if not isinstance(value, Mapping):
        problems.append(f"{path}: must be an object of strings")
        return {}
    for key, item in value.items():
        _expect(isinstance(item, str), f"{path}.{key}", f"must be a string (got {type(item).__name__})", problems)
    return {k: v for k, v in value.items() if isinstance(v, str)}


def _time(value: Any, path: str, problems: list[str], required: bool) -> datetime | None:
    if value is None and not required:
        return None
    try:
        return msgspec.convert(value, datetime)
    except msgspec.ValidationError:
        problems.append(f"{path}: must be an RFC 3339 time (got {value!r})")
        return None


def _expect(ok: bool, path: str, message: str, problems: list[str]) -> None:
    if not ok:
        problems.append(f"{path}: {message}")

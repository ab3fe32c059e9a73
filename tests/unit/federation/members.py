"""Member clusters in memory for fan-out tests: each an `Api` of its own (its own Roving on the popo store),
whose log is handed to a FederatedView as the hub's ROVING_FEDERATED would hold it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import msgspec

from adapters.federation import FEDERATED_STREAM, FederationStatus, MemberStatus
from adapters.hub_log import Arrivals
from adapters.jetstream.client import RawMsg
from adapters.jetstream.subjects import StreamNames, kind_of
from api.composition.settings import load_settings
from projections.federated import FederatedView
from tests.unit.api.harness import JOB, Api

HUB = "nats://hub.test:4222"
DOWN = "domain c2 does not answer: its nats-server is down or not connected to the hub as a leaf node"


def federated_api() -> Api:
    """This control plane (cluster `test`), told where the hub is."""
    api = Api()
    api.app.state.settings = msgspec.structs.replace(load_settings({}), federation_hub=HUB)
    return api


def submit(api: Api, who: str, name: str) -> str:
    answer = api.request("POST", "/v4/workflows", who, json={"name": name, "definition": JOB})
    assert answer.status_code == 201, answer.text
    return answer.json()["id"]


def hub_messages(cluster: str, member: Api, start: int) -> list[RawMsg]:
    """The member's whole log as federated messages numbered from `start`."""
    names, found = StreamNames(cluster), []
    notifications = member.services.roving.recorder.select_notifications(start=1, limit=100_000)
    for offset, n in enumerate(notifications):
        subject = names.subject("events", kind_of(n.topic), n.originator_id)
        headers = {"Roving-Topic": n.topic, "Roving-Version": str(n.originator_version),
                   "Nats-Stream-Source": f"{names.events}:abc {n.id} > > {subject} x"}
        if not isinstance(n.originator_id, UUID):
            headers["Roving-Id-Type"] = "str"
        found.append(RawMsg(start + offset, subject, headers, n.state))
    return found


def member_status(cluster: str, available: bool, silent: float = 0.1) -> MemberStatus:
    return MemberStatus(cluster=cluster, domain=cluster, stream=StreamNames(cluster).events, reachable=available,
                        sourcing=True, lag=0, active_seconds=silent, last_seen_seq=1,
                        member_last_seq=1 if available else None, error=None if available else DOWN)


def hub_view(members: dict[str, Api], down: tuple[str, ...] = ()) -> FederatedView:
    """What the hub holds of `members`, each member in sync unless named in `down`."""
    view, seq = FederatedView(), 0
    for cluster, member in members.items():
        messages = hub_messages(cluster, member, seq + 1)
        view.apply(Arrivals()(messages))
        seq += len(messages)
    statuses = [member_status(c, c not in down) for c in members]
    view.status = FederationStatus(HUB, FEDERATED_STREAM, True, seq, statuses, last_seq=seq)
    return view


def age_events(view: FederatedView, cluster: str, seconds: float) -> None:
    """Make the cluster's newest event `seconds` old, as if it had been quiet that long."""
    view.clusters[cluster].last_event_at = datetime.now(UTC) - timedelta(seconds=seconds)


def rows_by_cluster(answer: dict[str, Any]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for row in answer["queue"]:
        found.setdefault(row["cluster"], set()).add(row["workflow_id"])
    return found

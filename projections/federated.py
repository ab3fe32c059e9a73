"""The federated read model: every member cluster's events, read from the hub's ROVING_FEDERATED stream.

Each message keeps its member subject `roving.<cluster>.<kind>.<id>` (so its cluster), its topic in the
`Roving-Topic` header, its version in `Roving-Version`, and its MessagePack state. Workflow and
Allocation events are replayed into their aggregates per cluster, so a workflow's status here is the one
its own cluster computes. Answers name each cluster's availability (from `Federation.status()`): a member
that is down is shown as unavailable with what the hub last held, never as an empty cluster.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote
from uuid import UUID

import nats
from eventsourcing.persistence import Mapper, StoredEvent

from adapters.federation import FEDERATED_STREAM, FederationStatus, origin_sequence
from adapters.jetstream.subjects import TRACKING_KIND
from adapters.transcoder import MsgspecTranscoder
from projections.base import Mirror, as_uuid

MIRRORED = ("Workflow", "Allocation")
PAGE = 500


def parse_clusters(values: Iterable[str] | str | None) -> list[str] | None:
    """`--cluster a,b --cluster c` -> ['a', 'b', 'c']; nothing given -> None (every cluster)."""
    if values is None:
        return None
    if isinstance(values, str):
        values = [values]
    found: list[str] = []
    for value in values:
        for name in value.split(","):
            name = name.strip()
            if name and name not in found:
                found.append(name)
    return found or None


class UnknownWorkflow(LookupError):
    """No cluster in scope holds the workflow."""


@dataclass
class FederatedEvent:
    cluster: str
    seq: int  # position in the federated stream
    origin_seq: int | None  # position in the member's own stream
    aggregate_id: str
    kind: str
    topic: str
    version: int

    @property
    def type(self) -> str:
        return self.topic.partition(":")[2] or self.topic

    def to_dict(self) -> dict[str, Any]:
        return {"cluster": self.cluster, "seq": self.seq, "origin_seq": self.origin_seq,
                "aggregate_id": self.aggregate_id, "kind": self.kind, "type": self.type, "version": self.version}


@dataclass
class ClusterState:
    events: int = 0
    workflows: Mirror = field(default_factory=Mirror)
    allocations: Mirror = field(default_factory=Mirror)
    undecodable: int = 0


class FederatedView:
    """Built by `ingest` (one message at a time) or `catch_up` (from the hub); readers take `lock`."""

    def __init__(self) -> None:
        self.position = 0
        self.lock = threading.RLock()
        self.clusters: dict[str, ClusterState] = {}
        self.log: list[FederatedEvent] = []
        self.owner: dict[UUID, str] = {}  # workflow id -> cluster
        self.by_workflow: dict[UUID, list[FederatedEvent]] = {}
        self.status: FederationStatus | None = None
        self._mapper = Mapper(transcoder=MsgspecTranscoder())

    # -- feeding --------------------------------------------------------------------------------------
    def ingest(self, seq: int, subject: str, headers: dict[str, str], data: bytes) -> bool:
        """Apply one federated message; messages at or before the position are skipped. True if new."""
        with self.lock:
            if seq <= self.position:
                return False
            self.position = seq
            return self._ingest(seq, subject, headers, data)

    def _ingest(self, seq: int, subject: str, headers: dict[str, str], data: bytes) -> bool:
        parts = subject.split(".", 3)
        if len(parts) < 4 or parts[0] != "roving" or parts[2] == TRACKING_KIND or "Roving-Topic" not in headers:
            return False
        cluster, kind, token = parts[1], parts[2], unquote(parts[3])
        origin = origin_sequence(headers)
        event = FederatedEvent(cluster, seq, origin[1] if origin else None, token, kind,
                               headers["Roving-Topic"], int(headers.get("Roving-Version", 0)))
        state = self.clusters.setdefault(cluster, ClusterState())
        state.events += 1
        self.log.append(event)
        aggregate = event.type.split(".", 1)[0]
        if aggregate in MIRRORED:
            self._mirror(state, event, headers, data, aggregate)
        return True

    def _mirror(self, state: ClusterState, event: FederatedEvent, headers: dict[str, str], data: bytes,
                aggregate: str) -> None:
        originator: UUID | str = event.aggregate_id if headers.get("Roving-Id-Type") == "str" \
            else UUID(event.aggregate_id)
        try:
            domain_event = self._mapper.to_domain_event(
                StoredEvent(originator_id=originator, originator_version=event.version, topic=event.topic, state=data))
            mirror = state.workflows if aggregate == "Workflow" else state.allocations
            item = mirror.apply(domain_event)
        except Exception:  # noqa: BLE001 - an event this build cannot decode still counts, it is not mirrored
            state.undecodable += 1
            return
        workflow_id = item.id if aggregate == "Workflow" else getattr(item, "workflow_id", None)
        if workflow_id is not None:
            self.owner.setdefault(workflow_id, event.cluster)
            self.by_workflow.setdefault(workflow_id, []).append(event)

    async def catch_up(self, nc: nats.aio.client.Client, stream: str = FEDERATED_STREAM, timeout: float = 5.0) -> int:
        """Read every message of the federated stream past the position (direct gets); returns how many."""
        fresh = 0
        while True:
            inbox = nc.new_inbox()
            sub = await nc.subscribe(inbox)
            try:
                request = {"seq": self.position + 1, "next_by_subj": ">", "batch": PAGE}
                await nc.publish(f"$JS.API.DIRECT.GET.{stream}", json.dumps(request).encode(), reply=inbox)
                page = 0
                while True:
                    msg = await sub.next_msg(timeout=timeout)
                    headers = msg.headers or {}
                    if headers.get("Status"):
                        break
                    page += 1
                    fresh += self.ingest(int(headers["Nats-Sequence"]), headers["Nats-Subject"], headers, msg.data)
            finally:
                await sub.unsubscribe()
            if page == 0:
                return fresh

    @classmethod
    def from_hub(cls, hub_url: str, status: FederationStatus | None = None,
                 stream: str = FEDERATED_STREAM) -> "FederatedView":
        async def read() -> FederatedView:
            view = cls()
            nc = await nats.connect(hub_url, allow_reconnect=False, connect_timeout=5)
            try:
                await view.catch_up(nc, stream)
            finally:
                await nc.close()
            return view
        view = asyncio.run(read())
        view.status = status
        return view

    # -- answers --------------------------------------------------------------------------------------
    def _scope(self, clusters: Iterable[str] | str | None) -> list[str]:
        wanted = parse_clusters(clusters)
        known = set(self.clusters) | ({m.cluster for m in self.status.members} if self.status else set())
        return sorted(known) if wanted is None else wanted

    def availability(self, cluster: str) -> dict[str, Any]:
        if self.status is not None:
            for member in self.status.members:
                if member.cluster == cluster:
                    return {"available": member.available, "state": member.state, "error": member.error,
                            "lag": member.lag, "last_seen_seq": member.last_seen_seq}
        if cluster in self.clusters:
            return {"available": None, "state": "unknown", "error": None}  # no status asked for
        return {"available": False, "state": "unknown",
                "error": f"cluster {cluster} is not a member of the federation: add it with `roving federate --member`"}

    def events_per_cluster(self, clusters: Iterable[str] | str | None = None) -> dict[str, int]:
        with self.lock:
            return {c: self.clusters[c].events if c in self.clusters else 0 for c in self._scope(clusters)}

    def workflows(self, clusters: Iterable[str] | str | None = None) -> list[dict[str, Any]]:
        rows = []
        with self.lock:
            for cluster in self._scope(clusters):
                state = self.clusters.get(cluster)
                for wf in (state.workflows.values() if state else []):
                    rows.append({"cluster": cluster, "id": str(wf.id), "name": wf.name, "status": wf.status,
                                 "version": wf.version})
        return sorted(rows, key=lambda r: (r["cluster"], r["name"], r["id"]))

    def queue_stats(self, clusters: Iterable[str] | str | None = None) -> list[dict[str, Any]]:
        """Per cluster in scope: availability, event count, workflows by status, allocations by state."""
        answer = []
        with self.lock:
            for cluster in self._scope(clusters):
                state = self.clusters.get(cluster)
                workflows = Counter(wf.status for wf in state.workflows.values()) if state else Counter()
                allocations = Counter(
                    getattr(a.state, "value", str(a.state)) for a in state.allocations.values()) if state else Counter()
                answer.append({"cluster": cluster, **self.availability(cluster),
                               "events": state.events if state else 0,
                               "workflows": dict(sorted(workflows.items())),
                               "allocations": dict(sorted(allocations.items()))})
        return answer

    def owner_of(self, workflow_id: UUID | str, clusters: Iterable[str] | str | None = None) -> str:
        wid = as_uuid(workflow_id)
        with self.lock:
            cluster = self.owner.get(wid) if wid else None
        scope = parse_clusters(clusters)
        if cluster is None or (scope is not None and cluster not in scope):
            where = "any cluster" if scope is None else "cluster " + ", ".join(scope)
            raise UnknownWorkflow(f"workflow {workflow_id} is not in {where} of the federation "
                                  "(check the id, or widen --cluster)")
        return cluster

    def events(self, workflow_id: UUID | str, clusters: Iterable[str] | str | None = None) -> dict[str, Any]:
        """The workflow's and its allocations' events, from the cluster that owns it."""
        cluster = self.owner_of(workflow_id, clusters)
        with self.lock:
            events = [e.to_dict() for e in self.by_workflow.get(as_uuid(workflow_id), [])]
        return {"workflow_id": str(workflow_id), "cluster": cluster, **self.availability(cluster), "events": events}

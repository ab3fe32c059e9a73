"""The federated read model: every member cluster's events, as the hub's ROVING_FEDERATED stream holds them.

It is fed batches of (federated sequence, `Arrived`): each message already described (its cluster, kind,
aggregate, topic, version, its member stream's own sequence) and, for Workflow and Allocation events,
decoded, by adapters.hub_log, which reads the hub. Those events are replayed into their aggregates per
cluster, so a workflow's status here is the one its own cluster computes. Answers name each cluster's
availability (from `Federation.status()`): a member that is down is shown as unavailable with what the
hub last held, never as an empty cluster.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple
from uuid import UUID

from projections.base import Mirror, as_uuid

MIRRORED = ("Workflow", "Allocation")


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

    @property
    def aggregate(self) -> str:
        """The aggregate class the event belongs to, e.g. `Workflow`."""
        return self.type.split(".", 1)[0]

    def to_dict(self) -> dict[str, Any]:
        return {"cluster": self.cluster, "seq": self.seq, "origin_seq": self.origin_seq,
                "aggregate_id": self.aggregate_id, "kind": self.kind, "type": self.type, "version": self.version}


class Arrived(NamedTuple):
    """One federated event as the hub reader hands it on: `domain_event` is set for the MIRRORED aggregates'
    events this build can decode, and None for one it cannot (it still counts, it is not mirrored)."""

    event: FederatedEvent
    domain_event: Any = None


@dataclass
class ClusterState:
    events: int = 0
    workflows: Mirror = field(default_factory=Mirror)
    allocations: Mirror = field(default_factory=Mirror)
    undecodable: int = 0


class FederatedView:
    """Fed by `apply` (adapters.hub_log reads the hub into it); readers take `lock`. `status` is the hub's
    FederationStatus (adapters.federation), when it was asked for."""

    def __init__(self) -> None:
        self.position = 0
        self.lock = threading.RLock()
        self.clusters: dict[str, ClusterState] = {}
        self.log: list[FederatedEvent] = []
        self.owner: dict[UUID, str] = {}  # workflow id -> cluster
        self.by_workflow: dict[UUID, list[FederatedEvent]] = {}
        self.status: Any = None

    def apply(self, batch: Iterable[tuple[int, Arrived | None]]) -> int:
        """Apply the messages past the position (None: a message that is no event, such as a tracking
        record, which only moves the position); returns how many events were new."""
        fresh = 0
        with self.lock:
            for seq, arrived in batch:
                if seq <= self.position:
                    continue
                self.position = seq
                if arrived is not None:
                    self._count(arrived)
                    fresh += 1
        return fresh

    def _count(self, arrived: Arrived) -> None:
        event = arrived.event
        state = self.clusters.setdefault(event.cluster, ClusterState())
        state.events += 1
        self.log.append(event)
        if event.aggregate in MIRRORED:
            self._mirror(state, arrived)

    def _mirror(self, state: ClusterState, arrived: Arrived) -> None:
        event = arrived.event
        mirror = state.workflows if event.aggregate == "Workflow" else state.allocations
        try:
            if arrived.domain_event is None:
                raise ValueError(f"{event.topic} could not be decoded")
            item = mirror.apply(arrived.domain_event)
        except Exception:  # noqa: BLE001 - an event this build cannot decode or replay still counts, unmirrored
            state.undecodable += 1
            return
        workflow_id = item.id if event.aggregate == "Workflow" else getattr(item, "workflow_id", None)
        if workflow_id is not None:
            self.owner.setdefault(workflow_id, event.cluster)
            self.by_workflow.setdefault(workflow_id, []).append(event)

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

"""The federated read model: every member cluster's events, as the hub's ROVING_FEDERATED stream holds them.

It is fed batches of (federated sequence, `Arrived`): each message already described (its cluster, kind,
aggregate, topic, version, its member stream's own sequence) and, for Workflow and Allocation events,
decoded, by adapters.hub_log, which reads the hub. Each cluster's events feed that cluster's own `Views`
(the same workflows, queue, nodes and tenancy projections its control plane runs), so a workflow's status,
a queue row's priority or an activity line here is the one its own cluster computes. The member's runner keeps
its per-pass reasons to itself; its `SchedulingBlocked` events are what the hub sees of them, so each allocation's
latest one is kept (`ClusterState.blocked`) to answer `why` for that cluster's work. Answers name each cluster's availability
(from `Federation.status()`) and freshness: a member that is down, or whose source has been silent for
STALE_SECONDS, is shown as stale with the age of the last event the hub holds, never as an empty cluster.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple
from uuid import UUID

from domain.allocation import Allocation
from domain.scheduler.reasons import Reason, Why
from domain.workflow import Workflow
from projections.base import Mirror, as_uuid
from projections.views import Views

MIRRORED = ("Workflow", "Allocation")
STALE_SECONDS = 60.0  # a member whose hub source heard nothing (no event, no heartbeat) for this long is stale


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
    """One member as the hub holds it: its events fed into its own Views, the latest blocked cause of each of its
    allocations (by id as text, from `SchedulingBlocked` events), and when its newest event happened."""

    events: int = 0
    views: Views = field(default_factory=Views)
    blocked: dict[str, Why] = field(default_factory=dict)
    undecodable: int = 0
    last_event_at: datetime | None = None

    @property
    def workflows(self) -> Mirror[Workflow]:
        return self.views.workflows.mirror

    @property
    def allocations(self) -> Mirror[Allocation]:
        return self.views.queue.mirror


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
        event, domain_event = arrived
        state = self.clusters.setdefault(event.cluster, ClusterState())
        state.events += 1
        self.log.append(event)
        when = getattr(domain_event, "timestamp", None)
        if isinstance(when, datetime) and (state.last_event_at is None or when > state.last_event_at):
            state.last_event_at = when
        if domain_event is None:
            state.undecodable += event.aggregate in MIRRORED
            return
        try:
            state.views.apply([(event.seq, domain_event)])
        except Exception:  # noqa: BLE001 - an event this build cannot replay still counts, unmirrored
            state.undecodable += 1
            return
        self._remember(state, event, domain_event)

    def _remember(self, state: ClusterState, event: FederatedEvent, domain_event: Any) -> None:
        """Which cluster owns the workflow, its events, and the blocked reason that stands in for `why`."""
        if event.aggregate == "Workflow":
            workflow_id = domain_event.originator_id
        elif event.aggregate == "Allocation":
            workflow_id = getattr(state.allocations.get(domain_event.originator_id), "workflow_id", None)
            why = blocked_why(domain_event) if event.type == "Allocation.SchedulingBlocked" else None
            if why is not None:
                state.blocked[str(domain_event.originator_id)] = why
        else:
            return
        if workflow_id is not None:
            self.owner.setdefault(workflow_id, event.cluster)
            self.by_workflow.setdefault(workflow_id, []).append(event)

    # -- answers --------------------------------------------------------------------------------------
    def _scope(self, clusters: Iterable[str] | str | None) -> list[str]:
        wanted = parse_clusters(clusters)
        known = set(self.clusters) | ({m.cluster for m in self.status.members} if self.status else set())
        return sorted(known) if wanted is None else wanted

    def known(self) -> list[str]:
        """Every cluster the hub holds events of or sources (the ids `--cluster` may name)."""
        with self.lock:
            return sorted(set(self.clusters) | ({m.cluster for m in self.status.members} if self.status else set()))

    def cluster_views(self, cluster: str) -> Views | None:
        """The cluster's own projections as the hub's events built them (None: no event of it yet)."""
        state = self.clusters.get(cluster)
        return state.views if state else None

    def blocked(self, cluster: str, allocation_id: UUID | str) -> Why | None:
        """The allocation's latest `SchedulingBlocked` cause on its cluster: the hub's `why` for it."""
        with self.lock:
            state = self.clusters.get(cluster)
            return state.blocked.get(str(allocation_id)) if state else None

    def availability(self, cluster: str, now: datetime | None = None) -> dict[str, Any]:
        """Can the member be asked now, and how old is what the hub holds of it (`stale`, with the age)."""
        fresh = self.freshness(cluster, now)
        if self.status is not None:
            for member in self.status.members:
                if member.cluster == cluster:
                    silent = member.active_seconds
                    stale = not member.available or (silent is not None and silent > STALE_SECONDS)
                    return {"available": member.available, "state": member.state, "error": member.error,
                            "lag": member.lag, "last_seen_seq": member.last_seen_seq, "stale": stale,
                            "last_contact_seconds": silent, **fresh}
        if cluster in self.clusters:
            return {"available": None, "state": "unknown", "error": None, "stale": None, **fresh}  # no status asked
        return {"available": False, "state": "unknown", "stale": True, **fresh,
                "error": f"cluster {cluster} is not a member of the federation: add it with `roving federate --member`"}

    def freshness(self, cluster: str, now: datetime | None = None) -> dict[str, Any]:
        """When the newest event of the cluster the hub holds happened, and how many seconds ago."""
        state = self.clusters.get(cluster)
        at = state.last_event_at if state else None
        age = None if at is None else max(0.0, round(((now or datetime.now(UTC)) - at).total_seconds(), 3))
        return {"last_event_at": at.isoformat() if at else None, "last_event_age_seconds": age}

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
        key = as_uuid(workflow_id)
        with self.lock:
            events = [e.to_dict() for e in self.by_workflow.get(key, [])] if key is not None else []
        return {"workflow_id": str(workflow_id), "cluster": cluster, **self.availability(cluster), "events": events}


def blocked_why(event: Any) -> Why | None:
    """A `SchedulingBlocked` event as the `Why` the cluster's runner held when it recorded it (None: a reason
    this build does not know)."""
    try:
        return Why(reason=Reason(event.reason), message=event.message or str(event.reason))
    except ValueError:
        return None

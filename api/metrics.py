"""Prometheus metrics of the control plane (one registry: the default one), and the gauges read off the views."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from prometheus_client import Counter, Gauge, Histogram

from api.provisioning import metrics as provisioning_metrics
from domain.holds import NodeSummary, monitoring_hold_allowed

PASS_SECONDS = Histogram("roving_scheduler_pass_seconds", "Duration of one scheduling pass",
                         buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5))
WAKEUPS = Counter("roving_scheduler_wakeups_total", "Scheduler passes by what woke them", ["cause"])
PLACEMENTS = Counter("roving_scheduler_placements_total", "Allocations placed")
BACKFILLS = Counter("roving_scheduler_backfills_total", "Allocations backfilled")
PREEMPTIONS = Counter("roving_scheduler_preemptions_total", "Allocations preempted")
STALE_DECISIONS = Counter("roving_scheduler_stale_decisions_total", "Decisions refused because state moved on")
NEAR_MISSES = Gauge("roving_scheduler_near_miss_priority_gaps", "Near-miss priority gaps in the last pass")
READY_WAIT = Histogram("roving_scheduler_ready_queue_wait_seconds", "Time from READY to placement",
                       buckets=(0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 14400))
BLOCKED_BEFORE_EVICTION = Histogram("roving_scheduler_blocked_seconds_before_eviction",
                                    "How long a preemptor waited before it evicted", buckets=(1, 10, 60, 300, 3600))
BLOCKED_EVENTS = Counter("roving_scheduler_blocked_events_total", "SchedulingBlocked events written (new causes)")
NODES_LOST = Counter("roving_nodes_lost_total", "Nodes whose lease lapsed")
HOLDS_REFUSED = Counter("roving_monitoring_holds_refused_total",
                        "Monitoring holds refused by nodeHealth.maxMonitoringHeldPercent")
HOLD_CEILING = Gauge("roving_node_hold_ceiling_reached",
                     "1 when monitoring may hold no more nodes of the definition (nodeHealth.maxMonitoringHeldPercent)",
                     ["definition"])
QUEUE_DEPTH = Gauge("roving_queue_allocations", "Allocations by queue state", ["state"])
NODES = Gauge("roving_nodes", "Nodes (removed ones left out) by status", ["status"])
CPU_TOTAL = Gauge("roving_cpu_cores", "CPU cores of the nodes that are not removed")
CPU_ALLOCATED = Gauge("roving_cpu_cores_allocated", "CPU cores the allocations placed on those nodes asked for")
NODES_HELD = Gauge("roving_nodes_held", "Nodes under a hold, by the hold's source and effect", ["source", "effect"])
NATS_RESTARTS = Counter("roving_nats_restarts_total", "Times the embedded nats-server was restarted after it died")
NODE_STATUSES = ("READY", "NOT_READY", "OFFLINE")


def observe_views(views: Any, max_monitoring_percent: float) -> None:
    """Set the gauges from the read models just before a scrape: depth by queue state, nodes by status and hold."""
    QUEUE_DEPTH.clear()
    for state, depth in views.queue.stats()["depth"].items():
        QUEUE_DEPTH.labels(state).set(depth)
    rows = views.nodes.list()
    _count(NODES, [(r.status,) for r in rows], [(s,) for s in NODE_STATUSES])
    CPU_TOTAL.set(sum(r.cpu for r in rows))
    CPU_ALLOCATED.set(sum(r.allocated_cpu for r in rows))
    _count(NODES_HELD, [key for r in rows for key in {(h.source, h.effect) for h in r.holds}])
    HOLD_CEILING.clear()
    for definition, reached in ceilings(rows, max_monitoring_percent).items():
        HOLD_CEILING.labels(definition).set(1 if reached else 0)
    if hasattr(views, "provisioners"):
        provisioning_metrics.observe(views)


def ceilings(rows: Iterable[Any], percent: float) -> dict[str, bool]:
    """Per definition: would the ceiling refuse monitoring's next hold (on a node it does not hold yet)?"""
    by_definition: dict[str, list[NodeSummary]] = {}
    for row in rows:
        held = any(h.source == "monitoring" for h in row.holds)
        by_definition.setdefault(row.definition, []).append(NodeSummary(id=str(row.id), monitoring_held=held))
    reached = {}
    for definition, nodes in by_definition.items():
        free = [n.id for n in nodes if not n.monitoring_held]
        reached[definition] = not free or not monitoring_hold_allowed(nodes, free[0], percent)[0]
    return reached


def _count(gauge: Gauge, keys: list[tuple[str, ...]], zero: Iterable[tuple[str, ...]] = ()) -> None:
    gauge.clear()
    for key in zero:
        gauge.labels(*key).set(0)
    for key in keys:
        gauge.labels(*key).inc()

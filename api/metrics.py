"""Prometheus metrics of the control plane (one registry: the default one)."""

from prometheus_client import Counter, Gauge, Histogram

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
HOLD_CEILING = Counter("roving_node_hold_ceiling_reached", "Monitoring holds refused by the ceiling")
NATS_RESTARTS = Counter("roving_nats_restarts_total", "Times the embedded nats-server was restarted after it died")

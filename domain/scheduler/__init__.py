"""The scheduler: pure decision function over a snapshot, its configuration, reasons and simulator."""
from domain.scheduler.config import ConfigProblem, ConfigWarning, SchedulerConfig, validate_config
from domain.scheduler.decisions import Backfilled, Counters, Decisions, Placement, Preemption, ReservationHeld
from domain.scheduler.reasons import Reason, Why, blocked_events
from domain.scheduler.schedule import schedule
from domain.scheduler.snapshot import (
    Definition,
    Dependency,
    GroupPolicy,
    Hold,
    HoldEffect,
    HoldSource,
    Kind,
    NodeShape,
    NodeStatus,
    NodeTemplate,
    NodeView,
    PendingNode,
    QueuedAllocation,
    RunningAllocation,
    Snapshot,
)

__all__ = [
    "Backfilled", "ConfigProblem", "ConfigWarning", "Counters", "Decisions", "Definition", "Dependency",
    "GroupPolicy", "Hold", "HoldEffect", "HoldSource", "Kind", "NodeShape", "NodeStatus", "NodeTemplate", "NodeView",
    "PendingNode",
    "Placement", "Preemption", "QueuedAllocation", "Reason", "ReservationHeld", "RunningAllocation",
    "SchedulerConfig", "Snapshot", "Why", "blocked_events", "schedule", "validate_config",
]

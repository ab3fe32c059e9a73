"""The workflow activity stream: each workflow or allocation event as one sentence a user can read."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import msgspec

from domain.allocation import Allocation, priority_updated_text, scheduling_blocked_text
from domain.scheduler.preempted_text import readable_note
from domain.scheduler.priority import PriorityInputs, priority_set_text
from domain.workflow import Workflow
from projections import events

NodeName = Callable[[str], str]


class ActivityRow(msgspec.Struct, frozen=True, kw_only=True):
    """One line of a workflow's activity: when, which event, which stage, and what happened."""

    time: datetime
    type: str
    stage: str | None
    message: str
    position: int = 0


def _submitted(e: Workflow.Submitted, names: NodeName) -> str:
    return f"Submitted by {e.by}"


def _readied(e: Workflow.StageReadied, names: NodeName) -> str:
    return "Ready to run"


def _started(e: Workflow.StageStarted, names: NodeName) -> str:
    return f"Started on {names(e.node)}" + (f" (attempt {e.attempt})" if e.attempt > 1 else "")


def _running(e: Workflow.StageRunning, names: NodeName) -> str:
    return "Running: readiness probe passed"


def _finished(e: Workflow.StageFinished, names: NodeName) -> str:
    return f"Finished (exit {e.exit_code})" if e.exit_code is not None else e.reason


def _failed(e: Workflow.StageFailed, names: NodeName) -> str:
    return e.reason or f"Failed: exit {e.exit_code}"


def _reason(e: Workflow.StageRetried | Workflow.RetriesExhausted | Workflow.StagePreempted | Workflow.StageSkipped,
            names: NodeName) -> str:
    return str(e.reason)


def _scaled(e: Workflow.ServiceScaled, names: NodeName) -> str:
    stopped = f"; stopped {', '.join(e.stopped)}" if e.stopped else ""
    return f"Scaled from {e.from_size} to {e.to_size} replicas: {e.reason}{stopped}"


def _canceled(e: Workflow.Canceled, names: NodeName) -> str:
    return f"Canceled by {e.by}: {e.reason}"


def _requested(e: Allocation.Requested, names: NodeName) -> str:
    return priority_set_text(msgspec.convert(e.priority, PriorityInputs))


def _queued(e: Allocation.Event, names: NodeName) -> str:  # a Readied, or a Requested already ready
    return "Queued for scheduling"


def _placed(e: Allocation.Placed, names: NodeName) -> str:
    # what it preempted to start (events logged before notes have none; older notes named the victims)
    note = readable_note(getattr(e, "note", "") or "")
    return "Placed on " + ", ".join(names(node) for node in e.nodes) + (f". {note}" if note else "")


def _rank_exited(e: Allocation.RankExited, names: NodeName) -> str:
    """A multinode job's rank: the stage itself ends once every rank has exited."""
    return f"Rank {e.rank} on {names(e.node)} exited with code {e.exit_code}"


def _requeued(e: Allocation.Requeued, names: NodeName) -> str:
    return f"Requeued: {e.reason}"


def _ended(e: Allocation.Ended, names: NodeName) -> str | None:
    """FINISHED and FAILED are told by the workflow's own events; the rest say who stopped the work."""
    if e.state in ("FINISHED", "FAILED"):
        return None
    if e.state == "PREEMPTED":
        return str(e.reason)
    return f"{e.state.capitalize()}: {e.reason}"


def _volumes_bound(e: Workflow.VolumesBound, names: NodeName) -> str:
    """Where each persistent volume lives: a user finds their files there after the workflow."""
    return "Persistent volumes: " + "; ".join(f"{name} is {b['reference']} at {b['path']}"
                                               for name, b in sorted(e.bindings.items()))


MESSAGES: dict[type, Callable[[Any, NodeName], str | None]] = {  # by event class (projections.events)
    events.Submitted: _submitted,
    events.StageReadied: _readied,
    events.StageStarted: _started,
    events.StageRunning: _running,
    events.TransferProgressed: lambda e, n: e.text,
    events.ImageProgressed: lambda e, n: e.text,
    events.StageNoted: lambda e, n: e.text,
    events.VolumesBound: _volumes_bound,
    events.ServiceUnready: lambda e, n: f"Unready (still running, out of its endpoint): {e.reason}",
    events.ServiceReadyAgain: lambda e, n: "Ready again: back in its endpoint",
    events.ServiceScaled: _scaled,
    events.StageFinished: _finished,
    events.StageFailed: _failed,
    events.StageRetried: _reason,
    events.RetriesExhausted: _reason,
    events.StagePreempted: _reason,
    events.StageSkipped: _reason,
    events.Canceled: _canceled,
    events.Requested: _requested,
    events.ProfileBound: lambda e, n: f"Bound to profile {e.profile} (revision {e.revision})",
    events.Readied: _queued,
    events.Placed: _placed,
    events.AllocationPriorityUpdated: lambda e, n: priority_updated_text(e.kind, e.old, e.new),
    events.SchedulingBlocked: lambda e, n: scheduling_blocked_text(e.reason, e.message),
    events.Requeued: _requeued,
    events.RankExited: _rank_exited,
    events.Ended: _ended,
}


def skipped_rows(position: int, event: Any) -> list[ActivityRow]:
    """A StepsSkipped event as one line per step, read as the StageSkipped lines of older logs read."""
    when = getattr(event, "at", None) or event.timestamp
    return [ActivityRow(time=when, type="Workflow.StageSkipped", stage=step, message=reason, position=position)
            for step, reason, _ in event.steps]


def activity(position: int, event: Any, stage: str | None, names: NodeName) -> ActivityRow | None:
    """The row for one event, or None when the event tells a user nothing new."""
    kind = type(event).__qualname__  # the row's type, as the activity stream has always named it
    render = MESSAGES.get(type(event))
    text = render(event, names) if render else None
    if not text:
        return None
    when = getattr(event, "at", None) or event.timestamp
    return ActivityRow(time=when, type=kind, stage=stage, message=text, position=position)


def activity_rows(position: int, event: Any, stage: str | None, names: NodeName) -> list[ActivityRow]:
    """The rows for one event: an allocation requested ready (one event in newer logs) reads as older logs'
    Requested then Readied, two lines; a submission that readied its first stages (one event since issue 43) reads
    as older logs' Submitted then a StageReadied per stage."""
    rows = [row] if (row := activity(position, event, stage, names)) is not None else []
    if type(event) is events.Submitted:
        rows += [ActivityRow(time=event.at, type="Workflow.StageReadied", stage=name, message="Ready to run",
                             position=position) for name in getattr(event, "readied", None) or ()]
    requested = type(event) is events.Requested  # not a narrowing: the class's fields are known at run time only
    if requested and getattr(event, "ready", False):
        rows.append(ActivityRow(time=event.at, type="Allocation.Readied", stage=stage, message=_queued(event, names),
                                position=position))
    return rows

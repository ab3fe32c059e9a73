"""The Allocation aggregate: one placeable stage attempt, its queue state, placement with fencing, and times.

It holds its stage's request as the stage's own typed `Resources`; the `Requested` event records them as builtins
(as every version has), and `recorded_resources` is the one upcaster that reads them back.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from datetime import datetime
from typing import Any
from uuid import UUID

import msgspec
from eventsourcing.domain import event

from domain.fuzzfile import Resources
from domain.multinode import rank_reason
from domain.timed import TimedAggregate


class QueueState(str, enum.Enum):
    PENDING = "PENDING"
    READY = "READY"
    RUNNING = "RUNNING"
    FINISHED = "FINISHED"
    FAILED = "FAILED"
    CANCELED = "CANCELED"
    PREEMPTED = "PREEMPTED"
    EVICTED = "EVICTED"


ENDED = frozenset({QueueState.FINISHED, QueueState.FAILED, QueueState.CANCELED, QueueState.PREEMPTED, QueueState.EVICTED})
LEGAL = {
    QueueState.PENDING: {QueueState.READY, QueueState.CANCELED},
    QueueState.READY: {QueueState.RUNNING, QueueState.PENDING, QueueState.CANCELED},
    QueueState.RUNNING: {
        QueueState.RUNNING, QueueState.FINISHED, QueueState.FAILED, QueueState.CANCELED, QueueState.PREEMPTED,
        QueueState.EVICTED,
    },
}


class IllegalTransition(Exception):
    """An allocation asked to move between queue states that have no edge between them."""


class StaleFence(Exception):
    """A report carrying an older fencing epoch than the allocation's current placement."""


def effective_preemptible(stage: bool | None, start: bool | None, workflow: bool | None) -> bool:
    """Per-stage wins, then the start flag, then the top-level `preemptible`; unset means not preemptible."""
    return next((flag for flag in (stage, start, workflow) if flag is not None), False)


# Spellings of the request that the first queue view also read (a hand-written or federated log may carry them);
# the stage's own name wins when both are there.
OLD_SPELLINGS = {"cpu": "cpu_cores", "memory": "memory_bytes"}


def recorded_resources(recorded: Mapping[str, Any]) -> Resources:
    """The upcaster of a `Requested` event's `resources`: the stage's Resources as recorded (builtins, defaults
    omitted, in every version of the log), read back as the typed value."""
    named = {OLD_SPELLINGS.get(key, key): value for key, value in recorded.items()
             if OLD_SPELLINGS.get(key) not in recorded}
    return msgspec.convert(named, Resources)


class Allocation(TimedAggregate):
    # Set by events added after the first release; class defaults keep older histories replayable.
    blocked_cause: str = ""
    blocked_epoch: int = -1
    profile: str = ""  # the application profile its stage is bound to, and that profile's revision then
    profile_revision: int = 0
    exits: tuple[tuple[str, int], ...] = ()  # a multinode allocation: (node id, exit code) of each rank that exited
    failed_rank: int = -1  # the first rank that failed, which stops the others
    node_epochs: tuple[int, ...] = ()  # each node's agent epoch when it was placed there (older logs: not recorded)

    class Requested(TimedAggregate.Created):
        workflow_id: UUID
        stage: str
        attempt: int
        resources: dict[str, Any]
        priority: dict[str, int]
        preemptible: bool
        execute_timeout_seconds: float | None
        by: str
        at: datetime
        ready: bool

    @event(Requested)
    def __init__(
        self, id: UUID, workflow_id: UUID, stage: str, attempt: int, resources: dict[str, Any],
        priority: dict[str, int], preemptible: bool, execute_timeout_seconds: float | None, by: str, at: datetime,
        ready: bool = False,
    ) -> None:
        """`ready`: its dependencies already hold, so it is queued as it is requested (one event where older logs
        have a Requested and a Readied)."""
        if priority.get("workflow", 0) > 0:
            raise ValueError("workflow priority must be 0 or lower")
        self.workflow_id, self.stage, self.attempt = workflow_id, stage, attempt
        self.resources, self.priority, self.preemptible = recorded_resources(resources), priority, preemptible
        self.execute_timeout_seconds = execute_timeout_seconds
        self.state = QueueState.READY if ready else QueueState.PENDING
        self.nodes: list[str] = []
        self.epoch = 0
        self.requested_at = at
        self.started_at: datetime | None = None
        self.ended_at: datetime | None = None
        self.exit_code: int | None = None
        self.reason = ""

    @classmethod
    def request(
        cls, id: UUID, workflow_id: UUID, stage: str, attempt: int, resources: Resources, *,
        workflow_priority: int = 0, organization_priority: int = 0, group_priority: int = 0, user_priority: int = 0,
        preemptible: bool = False, execute_timeout_seconds: float | None = None, by: str, at: datetime,
        profile: str = "", profile_revision: int = 0, ready: bool = False,
    ) -> Allocation:
        """A new allocation for one stage attempt, PENDING or (`ready`) READY at once, asking for its stage's
        `resources` (recorded as builtins: the log keeps the shape it has always had)."""
        if workflow_priority > 0:
            raise ValueError(f"workflow priority must be 0 or lower, got {workflow_priority}")
        priority = {"workflow": workflow_priority, "organization": organization_priority,
                    "group": group_priority, "user": user_priority}
        return cls(id=id, workflow_id=workflow_id, stage=stage, attempt=attempt, resources=msgspec.to_builtins(resources),
                   priority=priority, preemptible=preemptible, execute_timeout_seconds=execute_timeout_seconds,
                   by=by, at=at, ready=ready)._bound(profile, profile_revision, by, at)


    def _bound(self, profile: str, revision: int, by: str, at: datetime) -> Allocation:
        if profile:
            self._profile_bound(profile=profile, revision=revision, by=by, at=at)
        return self

    class ProfileBound(TimedAggregate.Event):
        profile: str
        revision: int
        by: str
        at: datetime

    @event(ProfileBound)
    def _profile_bound(self, profile: str, revision: int, by: str, at: datetime) -> None:
        self.profile, self.profile_revision = profile, revision

    @property
    def ended(self) -> bool:
        return self.state in ENDED

    def mark_ready(self, by: str, at: datetime) -> None:
        """Its dependencies hold: the scheduler may place it."""
        self._check(QueueState.READY)
        self._readied(by=by, at=at)

    def place(self, nodes: list[str], by: str, at: datetime, note: str = "",
              node_epochs: tuple[int, ...] = ()) -> int:
        """Place (or re-place) on nodes; returns the new fencing epoch the agent must echo in its reports. `note`
        says what the placement took (the work it preempted, and why), for the activity; `node_epochs` are the
        nodes' agent epochs then, so work placed on a node whose agent registered again since is known as stray."""
        if (refused := self.placement_refusal(nodes)) is not None:
            raise IllegalTransition(refused)
        self._placed(nodes=list(nodes), epoch=self.epoch + 1, by=by, at=at, note=note, node_epochs=list(node_epochs))
        return self.epoch

    def node_epoch(self, node: str) -> int | None:
        """The agent epoch of `node` when this allocation was placed there (None: not recorded, or not placed)."""
        if node not in self.nodes or len(self.node_epochs) != len(self.nodes):
            return None
        return self.node_epochs[self.nodes.index(node)]

    def unplace(self, reason: str, by: str, at: datetime) -> None:
        """A placement the scheduler takes back before it ran (READY -> PENDING), e.g. lost reservation."""
        self._check(QueueState.PENDING)
        self._requeued(reason=reason, by=by, at=at)

    def exited(self, exit_code: int, epoch: int, by: str, at: datetime) -> None:
        self._fence(epoch)
        target = QueueState.FINISHED if exit_code == 0 else QueueState.FAILED
        self._check(target)
        self._ended(state=target.value, exit_code=exit_code, reason=f"exit {exit_code}", by=by, at=at)

    @property
    def multinode(self) -> bool:
        return len(self.nodes) > 1

    def rank_of(self, node: str) -> int:
        """A node's rank in its placement: its position in `nodes` (rank 0 leads)."""
        return self.nodes.index(node)

    @property
    def rank_exits(self) -> dict[str, int]:
        return dict(self.exits)

    @property
    def stopping(self) -> bool:
        """A rank failed: the ranks still running must be stopped, and the allocation ends once all have exited."""
        return self.failed_rank >= 0 and not self.ended

    def rank_exited(self, node: str, exit_code: int, epoch: int, by: str, at: datetime) -> bool:
        """One rank of a multinode allocation exited; the allocation ends (all ranks together) once every rank
        has: FAILED naming the first rank that failed, else FINISHED. Returns whether it ended now."""
        self._fence(epoch)
        if node not in self.nodes:
            raise StaleFence(f"node {node} holds no rank of allocation {self.stage} at epoch {self.epoch}")
        if node in self.rank_exits:
            return False  # its exit is recorded already
        self._check(QueueState.FAILED if exit_code else QueueState.FINISHED)
        self._rank_exited(node=node, rank=self.rank_of(node), exit_code=exit_code, by=by, at=at)
        if len(self.exits) < len(self.nodes):
            return False
        if self.failed_rank >= 0:
            code = self.rank_exits[self.nodes[self.failed_rank]]
            self._ended(state=QueueState.FAILED.value, exit_code=code, reason=rank_reason(self.failed_rank, code),
                        by=by, at=at)
        else:
            self._ended(state=QueueState.FINISHED.value, exit_code=0, reason="exit 0", by=by, at=at)
        return True

    def preempt(self, reason: str, by: str, at: datetime) -> None:
        self._check(QueueState.PREEMPTED)
        self._ended(state=QueueState.PREEMPTED.value, exit_code=None, reason=reason, by=by, at=at)

    def evict(self, reason: str, by: str, at: datetime) -> None:
        """Its node went away or was evicted; the workflow decides whether a new attempt follows."""
        self._check(QueueState.EVICTED)
        self._ended(state=QueueState.EVICTED.value, exit_code=None, reason=reason, by=by, at=at)

    def cancel(self, reason: str, by: str, at: datetime) -> None:
        self._check(QueueState.CANCELED)
        self._ended(state=QueueState.CANCELED.value, exit_code=None, reason=reason, by=by, at=at)

    def record_blocked(self, reason: str, message: str, cause: str, by: str, at: datetime) -> bool:
        """Say once why it cannot start; the same cause again (e.g. after a leader change) is no news."""
        if self.ended or (cause == self.blocked_cause and self.blocked_epoch == self.epoch):
            return False
        self._blocked(reason=reason, message=message, cause=cause, by=by, at=at)
        return True

    def update_priority(self, kind: str, new: int, by: str, at: datetime) -> bool:
        """An owner's priority changed (organization, group or user); False when it already had `new`."""
        if kind not in PRIORITY_KINDS:
            raise ValueError(f"priority kind must be one of {', '.join(PRIORITY_KINDS)}, got {kind!r}")
        old = int(self.priority.get(kind, 0))
        if self.ended or old == new:
            return False
        self._priority_updated(kind=kind, old=old, new=new, by=by, at=at)
        return True

    def placement_refusal(self, nodes: list[str]) -> str | None:
        """Why it cannot be placed on `nodes` now (None: it can); changes nothing."""
        if not nodes:
            return f"allocation {self.id} needs at least one node to be placed"
        return self._illegal(QueueState.RUNNING)

    def _check(self, target: QueueState) -> None:
        if (illegal := self._illegal(target)) is not None:
            raise IllegalTransition(illegal)

    def _illegal(self, target: QueueState) -> str | None:
        if target in LEGAL.get(self.state, set()):
            return None
        allowed = ", ".join(sorted(s.value for s in LEGAL.get(self.state, set()))) or "nothing (it has ended)"
        return (f"allocation {self.stage} attempt {self.attempt} is {self.state.value}; "
                f"it cannot become {target.value} (from {self.state.value} it can become {allowed})")

    def _fence(self, epoch: int) -> None:
        if epoch != self.epoch:
            raise StaleFence(f"report for epoch {epoch} refused: allocation {self.stage} is at epoch {self.epoch}")

    class Readied(TimedAggregate.Event):
        by: str
        at: datetime

    @event(Readied)
    def _readied(self, by: str, at: datetime) -> None:
        self.state = QueueState.READY

    class Placed(TimedAggregate.Event):
        nodes: list[str]
        epoch: int
        by: str
        at: datetime
        note: str
        node_epochs: list[int] | None = None  # each node's agent epoch at placement (older logs: not recorded)

    @event(Placed)
    def _placed(self, nodes: list[str], epoch: int, by: str, at: datetime, note: str = "",
                node_epochs: list[int] | None = None) -> None:
        self.state, self.nodes, self.epoch, self.started_at = QueueState.RUNNING, nodes, epoch, at
        self.node_epochs = tuple(node_epochs or ())
        self.exits, self.failed_rank = (), -1  # a new placement: every rank starts again

    class Requeued(TimedAggregate.Event):
        reason: str
        by: str
        at: datetime

    @event(Requeued)
    def _requeued(self, reason: str, by: str, at: datetime) -> None:
        self.state, self.reason = QueueState.PENDING, reason

    class Ended(TimedAggregate.Event):
        state: str
        exit_code: int | None
        reason: str
        by: str
        at: datetime

    @event(Ended)
    def _ended(self, state: str, exit_code: int | None, reason: str, by: str, at: datetime) -> None:
        self.state, self.exit_code, self.reason, self.ended_at = QueueState(state), exit_code, reason, at

    class RankExited(TimedAggregate.Event):
        node: str
        rank: int
        exit_code: int
        by: str
        at: datetime

    @event(RankExited)
    def _rank_exited(self, node: str, rank: int, exit_code: int, by: str, at: datetime) -> None:
        self.exits = (*self.exits, (node, exit_code))
        if exit_code and self.failed_rank < 0:
            self.failed_rank = rank

    class SchedulingBlocked(TimedAggregate.Event):
        reason: str
        message: str
        cause: str
        by: str
        at: datetime

    @event(SchedulingBlocked)
    def _blocked(self, reason: str, message: str, cause: str, by: str, at: datetime) -> None:
        self.blocked_cause, self.blocked_epoch = cause, self.epoch

    class PriorityUpdated(TimedAggregate.Event):
        kind: str
        old: int
        new: int
        by: str
        at: datetime

    @event(PriorityUpdated)
    def _priority_updated(self, kind: str, old: int, new: int, by: str, at: datetime) -> None:
        self.priority = {**self.priority, kind: new}  # a new dict: the Requested event's stays as recorded


PRIORITY_KINDS = ("organization", "group", "user")


def priority_updated_text(kind: str, old: int, new: int) -> str:
    """The activity line of a `PriorityUpdated` event."""
    return f"Priority updated: {kind} {old} -> {new}"


def scheduling_blocked_text(reason: str, message: str) -> str:
    """The activity line of a `SchedulingBlocked` event."""
    return f"Waiting: {message}" if message else f"Waiting: {reason}"

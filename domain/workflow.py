"""The Workflow aggregate: a submitted definition's stages, their dependencies, retries, cancel and status.

One class, one concept, and so one module although it is long (about 600 lines, 220 of them its events, each
declared beside the handler that is its effect): every command here checks a report or a request against the same
state (the stage book, the attempt each stage is on, the volumes' nodes, the service pools) and records what it
decided through one of the same events, and every query reads that state. Its parts are in this order: the state
and its creation; what it shows; what it is told of its stages' attempts and how it retries; its service pools and
volumes; how it moves stages on after every change; its events (each one's effect on the state). What owns its own
state or is a rule of its own is carved out and called, not attached: the stage book (domain/workflow_book.py),
each step's and stage's state and view (domain/workflow_stages.py), the retry rules (domain/fuzzfile/semantics.py)
and what a failed attempt decides by them (domain/workflow_retries.py), the service pools and which services are no
longer needed (domain/workflow_services.py), where its volumes live (domain/workflow_volumes.py), and how its
stages move on after every change (domain/workflow_advance.py).
Every event class stays nested in `Workflow` here, so the topics stored in the log (`domain.workflow:Workflow.
StageStarted`) are the ones this class has always had (tests/unit/workflow/test_workflow_golden.py replays them);
each is declared with its fields, in the order its command takes them, so read models type what they read.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

import msgspec
from eventsourcing.domain import event

from domain import workflow_services as services
from domain.autoscale import Pool
from domain.fuzzfile import Stage
from domain.fuzzfile.images import BUILD
from domain.fuzzfile.schema import Workflow as Definition
from domain.fuzzfile.semantics import RetryDecision, StageStatus
from domain.fuzzfile.stages import list_steps
from domain.fuzzfile.transfers import TRANSFER_KINDS
from domain.timed import TimedAggregate
from domain.workflow_advance import advance
from domain.workflow_book import StageBook
from domain.workflow_retries import DEFAULT_MAX_EVICTION_RESTARTS, exit_decision, node_loss_decision, spent_budget
from domain.workflow_stages import ReadyStage, StageState, StageView, StepState, WorkflowError
from domain.workflow_volumes import node_volumes, volume_refusal

__all__ = [
    "DEFAULT_MAX_EVICTION_RESTARTS", "ReadyStage", "StageView", "Workflow", "WorkflowError",
]

UP = (StageStatus.STARTED, StageStatus.RUNNING)
# What an agent tells of a placed attempt (progress, its image, a note) changes no state, so it is taken before the
# workflow has learned of the start (a placement writes only its allocation; the caller checked the placement).
TOLD = (StageStatus.READY, *UP)
MAKES_READY = ("StageReadied", "StageRetried", "StagePreempted")


def _made_ready(event: Any) -> list[str]:
    """The stages an event made READY: one for a StageReadied, a retry or a preemption; a Submitted's readied."""
    kind = type(event).__name__
    if kind == "Submitted":
        return list(getattr(event, "readied", None) or ())
    return [event.stage] if kind in MAKES_READY else []


class Workflow(TimedAggregate):
    unchanging = ("definition", "owner")  # the parsed definition and the owner never change after submission
    takes_turns = True  # the scheduler's placements and the agents' reports change it at once

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        for step in self.book.order:  # each step's parsed definition is the submission's, shared
            memo[id(step.definition)] = step.definition
        return super().__deepcopy__(memo)

    class Submitted(TimedAggregate.Created):
        name: str
        definition: dict[str, Any]
        owner: dict[str, str]
        priority: int
        preemptible: bool | None
        by: str
        at: datetime
        # the stages its submission made READY (issue 43: one event, so a submit is one message per aggregate); None
        # in older logs, whose Submitted is followed by a StageReadied per stage, and when the submission skipped steps
        readied: list[str] | None = None

    @event(Submitted)
    def __init__(
        self, id: UUID, name: str, definition: dict[str, Any], owner: dict[str, str],
        priority: int, preemptible: bool | None, by: str, at: datetime, readied: list[str] | None = None,
    ) -> None:
        self.name, self.owner, self.priority, self.preemptible = name, owner, priority, preemptible
        self.submitted_by, self.submitted_at = by, at
        self.definition = msgspec.convert(definition, Definition)
        self.book = StageBook(list_steps(self.definition))
        self.canceled_reason: str | None = None
        services.size_pools(self.book, self.definition.services or {})
        for stage in readied or ():
            self._make_ready(stage)

    @classmethod
    def submit(
        cls, id: UUID, name: str, definition: Definition, owner: dict[str, str], priority: int = 0,
        preemptible: bool | None = None, *, by: str, at: datetime,
    ) -> Workflow:
        """Start a workflow from a validated definition; stages whose conditions hold become READY at once."""

        if priority > 0:
            raise WorkflowError(f"workflow priority must be 0 or lower, got {priority}")
        fields = dict(id=id, name=name, definition=msgspec.to_builtins(definition), owner=dict(owner),
                      priority=priority, preemptible=preemptible, by=by, at=at)
        workflow = cls(**fields)
        workflow._advance(at, *workflow.book.order)
        pending: list[Any] = workflow.pending_events  # Workflow's own events, made by the metaclass: unknown to mypy
        if not all(type(e).__name__ == "StageReadied" for e in pending[1:]):
            return workflow  # it skipped steps at once: recorded as before, Submitted then what its advance did
        return cls(**fields, readied=[e.stage for e in pending[1:]])  # the same state, as one event

    @property
    def stages(self) -> StageBook:
        """Every stage by name, in definition order; a task's state is made when asked for until it moves."""
        return self.book

    @property
    def status(self) -> str:
        """PENDING, STARTED, FINISHED, FAILED or CANCELED, derived from the stages."""
        if self.canceled_reason is not None:
            return "CANCELED"
        book = self.book
        if book.ended == book.total:
            return "FAILED" if book.failed or book.accidental_skips else "FINISHED"
        return "STARTED" if book.stirred else "PENDING"

    @property
    def stages_ended(self) -> int:
        return self.book.ended

    @property
    def volume_nodes(self) -> dict[str, str]:
        """Volume name -> the node holding it: the node the first stage using it started on (made lazily, so a
        workflow restored from a snapshot taken before volumes existed has it too)."""
        found: dict[str, str] = self.__dict__.setdefault("_volume_nodes", {})
        return found

    @property
    def volume_bindings(self) -> dict[str, dict[str, Any]]:
        """Persistent volume name -> its binding (domain.volumes.Binding as a dict), fixed at submission."""
        found: dict[str, dict[str, Any]] = self.__dict__.setdefault("_volume_bindings", {})
        return found

    # What it shows: its stages' views (each state's own, with why it waits), what the scheduler may allocate now

    def stage(self, name: str) -> StageView:
        return self._state(name).view()

    def stage_views(self) -> list[StageView]:
        return [s.view() for s in self.book.states()]

    def step_specs(self) -> list[Stage]:
        """One spec per job, service and task array (an array's template): what every stage of it asks for."""
        return [step.definition.template for step in self.book.order]

    def live_stage_views(self) -> list[StageView]:
        """READY, STARTED and RUNNING stages only: what may hold an allocation."""
        return [s.view() for s in self.book.in_order(self.book.live.values())]

    def ready_stages(self) -> list[ReadyStage]:
        """What may be allocated now (task arrays already limited to their concurrency)."""
        ready = [s for s in self.book.live.values() if s.status is StageStatus.READY]
        return [self._ready(s) for s in self.book.in_order(ready)]

    def newly_ready(self) -> list[ReadyStage]:
        """Stages made READY by events not yet saved: each is a new attempt, so none has an allocation yet."""
        pending: list[Any] = self.pending_events  # Workflow's own events, made by the metaclass: unknown to mypy
        names = dict.fromkeys(stage for e in pending for stage in _made_ready(e))
        states = [self.book.live.get(name) for name in names]
        return [self._ready(s) for s in states if s is not None and s.status is StageStatus.READY]

    def service_of(self, stage: str) -> str:
        """The job or service a stage belongs to (`web` for replica `web[2]`)."""
        return self._state(stage).template.step

    def live_replicas(self, service: str) -> list[str]:
        """The stages of `service` that are READY, STARTED or RUNNING."""
        return services.live_replicas(self.book, service)

    def _ready(self, state: StageState) -> ReadyStage:
        spec = state.spec
        return ReadyStage(spec, state.attempt, self._preemptible(spec), self.priority)

    def _preemptible(self, spec: Stage) -> bool:
        for flag in (spec.preemptible, self.preemptible, self.definition.preemptible):
            if flag is not None:
                return flag
        return False

    def _state(self, name: str) -> StageState:
        if name not in self.book:
            raise WorkflowError(f"workflow {self.name} has no stage named {name}")
        return self.book[name]

    # What it is told of its stages' attempts, each checked against the attempt it names, and how it retries; cancel

    def stage_started(self, stage: str, attempt: int, node: str, at: datetime, by: str = "agent") -> None:
        if (refused := self.start_refusal(stage, attempt, node)) is not None:
            raise WorkflowError(refused)
        self._started(stage=stage, attempt=attempt, node=node, by=by, at=at)

    def start_binds_volumes(self, stage: str) -> bool:
        """Whether the stage's start binds volumes to its node (ephemeral volumes live where they were first used):
        such a start is recorded as it is placed, so the next stage's placement sees the binding."""
        return bool(node_volumes(self._state(stage).template, self.volume_bindings))

    def start_refusal(self, stage: str, attempt: int, node: str) -> str | None:
        """Why the stage's attempt cannot start on `node` now (None: it can); changes nothing."""
        try:
            state = self._expect(stage, attempt, (StageStatus.READY,), "start")
        except WorkflowError as error:
            return str(error)
        return volume_refusal(stage, state.template, node, self.volume_nodes, self.volume_bindings)

    def stage_running(self, stage: str, attempt: int, at: datetime, by: str = "agent") -> None:
        """A service passed its readiness probe; dependents waiting for RUNNING may go."""
        state = self._expect(stage, attempt, (StageStatus.STARTED,), "mark running")
        if state.step.kind != "service":
            raise WorkflowError(f"{stage} is a job; only services become RUNNING (after their readiness probe)")
        self._running(stage=stage, attempt=attempt, by=by, at=at)
        self._advance(at, state.step)

    def service_unready(self, stage: str, attempt: int, reason: str, at: datetime, by: str = "agent") -> bool:
        """A ready service's readiness probe failed: it leaves its endpoint but keeps running (and stays RUNNING for
        its dependents). False when it was unready already."""
        state = self._expect(stage, attempt, (StageStatus.RUNNING,), "become unready")
        if state.unready:
            return False
        self._unready(stage=stage, attempt=attempt, reason=reason[:300], by=by, at=at)
        return True

    def service_ready_again(self, stage: str, attempt: int, at: datetime, by: str = "agent") -> bool:
        """An unready service's probe passes again; False when it was not unready (a repeated report)."""
        state = self._expect(stage, attempt, (StageStatus.RUNNING,), "become ready again")
        if not state.unready:
            return False
        self._ready_again(stage=stage, attempt=attempt, by=by, at=at)
        return True

    def stage_exited(self, stage: str, attempt: int, exit_code: int, at: datetime, by: str = "agent",
                     told: str = "") -> None:
        """`told`: the agent's reason. A failing pre hook (named) or a failed ingress or egress (its URI and the
        cause) replaces the exit code's own words when the stage fails; a failed readiness probe or an execute
        timeout is named beside the exit code."""
        state = self._expect(stage, attempt, UP, "exit")
        if exit_code == 0:
            said = f"Finished: {told}" if told and state.template.kind == BUILD else "Finished"  # built or cached
            self._finished(stage=stage, attempt=attempt, exit_code=0, reason=said, by=by, at=at)
        else:
            decision = exit_decision(state.template, exit_code, state.retries_used, told)
            self._retry_or_fail(state, attempt, decision, "exit", exit_code, by, at)
        self._advance(at, state.step)

    def transfer_progressed(self, stage: str, attempt: int, text: str, at: datetime, by: str = "agent") -> None:
        """A running ingress or egress says how far it has come (the text is the agent's, at most 300 characters)."""
        state = self._expect(stage, attempt, (StageStatus.READY, StageStatus.STARTED), "report progress")
        if state.template.kind not in (*TRANSFER_KINDS, BUILD):
            raise WorkflowError(f"{stage} is a {state.template.kind}; "
                                "only ingress and egress report progress (and builds their steps)")
        self._progressed(stage=stage, attempt=attempt, text=text[:300], by=by, at=at)

    def image_progressed(self, stage: str, attempt: int, text: str, at: datetime, by: str = "agent") -> None:
        """The node pulls the stage's image, or has it ready (the text is the agent's, at most 300 characters)."""
        self._expect(stage, attempt, TOLD, "report its image")
        self._image_progressed(stage=stage, attempt=attempt, text=text[:300], by=by, at=at)

    def stage_noted(self, stage: str, attempt: int, text: str, at: datetime, by: str = "agent") -> None:
        """The node ran the stage but could not do all it was asked (e.g. set its memlock limit): said, not silent."""
        self._expect(stage, attempt, TOLD, "report a note")
        self._noted(stage=stage, attempt=attempt, text=text[:300], by=by, at=at)

    def stage_stopped(self, stage: str, attempt: int, at: datetime, by: str = "agent") -> None:
        """A service stopped because nothing needs it any more: that is its normal end."""
        state = self._expect(stage, attempt, UP, "stop")
        self._finished(stage=stage, attempt=attempt, exit_code=None, reason="Stopped: no remaining dependents", by=by, at=at)
        self._close_pool(state.step, at)
        self._advance(at, state.step)

    def stage_lost_node(
        self, stage: str, attempt: int, at: datetime,
        max_eviction_restarts: int = DEFAULT_MAX_EVICTION_RESTARTS, by: str = "agent", cause: str = "",
    ) -> None:
        """`cause`: why its node went (an eviction's hold reason, a removal), named instead of 'lost its node'."""
        state = self._expect(stage, attempt, UP, "lose its node")
        decision = node_loss_decision(state, max_eviction_restarts, cause)
        self._retry_or_fail(state, attempt, decision, "node", None, by, at)
        self._advance(at, state.step)

    def stage_preempted(self, stage: str, attempt: int, at: datetime, by: str = "scheduler",
                        requeue: bool = True) -> None:
        """Preemption requeues the stage as a new attempt without spending its retry budget, or abandons it."""
        state = self._expect(stage, attempt, UP, "be preempted")
        if requeue:
            self._preempted(stage=stage, attempt=attempt, reason=f"Preempted; requeued as attempt {attempt + 1}", by=by, at=at)
        else:
            self._skipped(stage=stage, reason="Canceled: preempted and abandoned", by_design=False, by=by, at=at)
        self._advance(at, state.step)

    def cancel(self, by: str, at: datetime, reason: str = "") -> None:
        if self.status in ("FINISHED", "FAILED", "CANCELED"):
            raise WorkflowError(f"workflow {self.name} already ended {self.status}; nothing to cancel")
        self._canceled(reason=reason or "canceled", by=by, at=at)

    def _retry_or_fail(self, state: StageState, attempt: int, decision: RetryDecision, cause: str,
                       exit_code: int | None, by: str, at: datetime) -> None:
        stage = state.name
        if decision.retry:
            self._retried(stage=stage, attempt=attempt, cause=cause, exit_code=exit_code, reason=decision.reason, by=by, at=at)
            return
        if spent_budget(decision):
            self._exhausted(stage=stage, attempt=attempt, cause=cause, reason=decision.reason, by=by, at=at)
        self._failed(stage=stage, attempt=attempt, exit_code=exit_code, reason=decision.reason, by=by, at=at)

    def _expect(self, name: str, attempt: int, allowed: tuple[StageStatus, ...], doing: str) -> StageState:
        state = self._state(name)
        if self.canceled_reason is not None:
            raise WorkflowError(f"workflow {self.name} was canceled; {name} cannot {doing}")
        if attempt != state.attempt:
            raise WorkflowError(f"{name} is on attempt {state.attempt}; a report for attempt {attempt} is stale")
        if state.status not in allowed:
            raise WorkflowError(f"{name} is {state.status.value}; it cannot {doing} now")
        return state

    # Its autoscaled service pools and the nodes its volumes live on

    def pools(self) -> list[Pool]:
        """Every autoscaled service of a workflow still running: its size, rule and last scale step."""
        return [] if self.canceled_reason is not None else services.pools(self.book, self.definition.services or {})

    def scale_service(self, service: str, to: int, reason: str, at: datetime, by: str = "autoscaler") -> list[str]:
        """Grow or shrink an autoscaled pool to `to` replicas. Shrinking stops the highest-numbered live replicas
        (they wait, PENDING, to be the first started again); growing readies the next ones. Returns the stages
        stopped (their allocations are the caller's to cancel)."""
        ended = self.canceled_reason is not None
        step, size, stopped = services.scaling(self.book, self.definition.services or {}, service, to, self.name, ended)
        self._scaled(service=service, from_size=size, to_size=to, reason=reason, stopped=stopped, by=by, at=at)
        self._advance(at, step)
        return stopped

    def services_to_stop(self) -> list[str]:
        """Non-persistent services still up although every job has ended."""
        return services.services_to_stop(self.book)

    def services_never_needed(self) -> list[str]:
        """Non-persistent services that have not started although every job has ended (domain.workflow_services)."""
        return services.services_never_needed(self.book)

    def stage_not_needed(self, stage: str, at: datetime, by: str = "scheduler") -> None:
        """A service that never started ends as a stopped one does: nothing needs it."""
        state = self._state(stage)
        self._finished(stage=stage, attempt=state.attempt, exit_code=None,
                       reason="Stopped: every job ended before it started", by=by, at=at)
        self._advance(at, state.step)

    def _close_pool(self, step: StepState, at: datetime) -> None:
        """The last live replica of an autoscaled pool stopped: its stages not running end too."""
        for name in services.unneeded_replicas(self.book, step):
            self._finished(stage=name, attempt=self.book[name].attempt, exit_code=None,
                           reason=f"Stopped: not needed (the pool ran {step.limit})", by="workflow", at=at)

    def bind_volumes(self, bindings: dict[str, dict[str, Any]], by: str, at: datetime) -> None:
        """Record where the persistent volumes live (a VolumesBound event; none, no event)."""
        if bindings:
            self._volumes_bound(bindings=bindings, by=by, at=at)

    # Moving stages on after every change: what it decides, the events StageReadied and StepsSkipped record

    def _advance(self, at: datetime, *changed: StepState) -> None:
        """Skip stages whose conditions can never hold, ready those whose conditions hold, until nothing moves
        (domain/workflow_advance.py decides; each decision is recorded here as it is made)."""
        advance(self.book, changed, lambda stage: self._readied(stage=stage, by="workflow", at=at),
                lambda steps: self._steps_skipped(steps=steps, by="workflow", at=at))

    class VolumesBound(TimedAggregate.Event):
        bindings: dict[str, dict[str, Any]]
        by: str
        at: datetime

    @event(VolumesBound)
    def _volumes_bound(self, bindings: dict[str, dict[str, Any]], by: str, at: datetime) -> None:
        self.__dict__["_volume_bindings"] = dict(bindings)

    class StageReadied(TimedAggregate.Event):
        stage: str
        by: str
        at: datetime

    @event(StageReadied)
    def _readied(self, stage: str, by: str, at: datetime) -> None:
        self._make_ready(stage)

    def _make_ready(self, stage: str) -> None:
        """What a StageReadied does, and a Submitted for each stage it readied."""
        state = self.book.touch(stage)
        if state.offset in state.step.parked:  # a scaled-down replica starts again
            state.reason = ""
        self.book.move(state, StageStatus.READY)

    class ServiceScaled(TimedAggregate.Event):
        service: str
        from_size: int
        to_size: int
        reason: str
        stopped: list[str]
        by: str
        at: datetime

    @event(ServiceScaled)
    def _scaled(self, service: str, from_size: int, to_size: int, reason: str, stopped: list[str], by: str,
                at: datetime) -> None:
        services.rescale(self.book, service, to_size, reason, stopped, at)

    class StageStarted(TimedAggregate.Event):
        stage: str
        attempt: int
        node: str
        by: str
        at: datetime

    @event(StageStarted)
    def _started(self, stage: str, attempt: int, node: str, by: str, at: datetime) -> None:
        state = self.book.touch(stage)
        for volume in node_volumes(state.template, self.volume_bindings):  # ephemeral ones live where first used
            self.volume_nodes.setdefault(volume, node)
        state.node, state.reason = node, ""
        self.book.move(state, StageStatus.STARTED)

    class TransferProgressed(TimedAggregate.Event):
        stage: str
        attempt: int
        text: str
        by: str
        at: datetime

    @event(TransferProgressed)
    def _progressed(self, stage: str, attempt: int, text: str, by: str, at: datetime) -> None:
        pass  # told, not kept: the activity stream shows it

    class ImageProgressed(TimedAggregate.Event):
        stage: str
        attempt: int
        text: str
        by: str
        at: datetime

    @event(ImageProgressed)
    def _image_progressed(self, stage: str, attempt: int, text: str, by: str, at: datetime) -> None:
        pass  # told, not kept: the activity stream shows it

    class StageNoted(TimedAggregate.Event):
        stage: str
        attempt: int
        text: str
        by: str
        at: datetime

    @event(StageNoted)
    def _noted(self, stage: str, attempt: int, text: str, by: str, at: datetime) -> None:
        pass  # told, not kept: the activity stream shows it

    class StageRunning(TimedAggregate.Event):
        stage: str
        attempt: int
        by: str
        at: datetime

    @event(StageRunning)
    def _running(self, stage: str, attempt: int, by: str, at: datetime) -> None:
        state = self.book.touch(stage)
        state.unready = False
        self.book.move(state, StageStatus.RUNNING)

    class ServiceUnready(TimedAggregate.Event):
        stage: str
        attempt: int
        reason: str
        by: str
        at: datetime

    @event(ServiceUnready)
    def _unready(self, stage: str, attempt: int, reason: str, by: str, at: datetime) -> None:
        state = self.book.touch(stage)
        state.unready, state.reason = True, f"Unready: {reason}"

    class ServiceReadyAgain(TimedAggregate.Event):
        stage: str
        attempt: int
        by: str
        at: datetime

    @event(ServiceReadyAgain)
    def _ready_again(self, stage: str, attempt: int, by: str, at: datetime) -> None:
        state = self.book.touch(stage)
        state.unready, state.reason = False, ""

    class StageFinished(TimedAggregate.Event):
        stage: str
        attempt: int
        exit_code: int | None
        reason: str
        by: str
        at: datetime

    @event(StageFinished)
    def _finished(self, stage: str, attempt: int, exit_code: int | None, reason: str, by: str, at: datetime) -> None:
        state = self.book.touch(stage)
        state.exit_code, state.reason = exit_code, reason
        self.book.move(state, StageStatus.FINISHED)

    class StageFailed(TimedAggregate.Event):
        stage: str
        attempt: int
        exit_code: int | None
        reason: str
        by: str
        at: datetime

    @event(StageFailed)
    def _failed(self, stage: str, attempt: int, exit_code: int | None, reason: str, by: str, at: datetime) -> None:
        state = self.book.touch(stage)
        state.exit_code, state.reason = exit_code, reason
        self.book.move(state, StageStatus.FAILED)

    class StageRetried(TimedAggregate.Event):
        stage: str
        attempt: int
        cause: str
        exit_code: int | None
        reason: str
        by: str
        at: datetime

    @event(StageRetried)
    def _retried(self, stage: str, attempt: int, cause: str, exit_code: int | None, reason: str, by: str, at: datetime) -> None:
        state = self.book.touch(stage)
        state.reason, state.exit_code = reason, exit_code
        state.attempt, state.retries_used = attempt + 1, state.retries_used + 1
        state.node_retries_used += cause == "node"
        self.book.move(state, StageStatus.READY)

    class RetriesExhausted(TimedAggregate.Event):
        stage: str
        attempt: int
        cause: str
        reason: str
        by: str
        at: datetime

    @event(RetriesExhausted)
    def _exhausted(self, stage: str, attempt: int, cause: str, reason: str, by: str, at: datetime) -> None:
        self.book.touch(stage).reason = reason

    class StagePreempted(TimedAggregate.Event):
        stage: str
        attempt: int
        reason: str
        by: str
        at: datetime

    @event(StagePreempted)
    def _preempted(self, stage: str, attempt: int, reason: str, by: str, at: datetime) -> None:
        state = self.book.touch(stage)
        state.reason, state.attempt, state.node = reason, attempt + 1, None
        self.book.move(state, StageStatus.READY)

    class StageSkipped(TimedAggregate.Event):
        stage: str
        reason: str
        by_design: bool
        by: str
        at: datetime

    @event(StageSkipped)
    def _skipped(self, stage: str, reason: str, by_design: bool, by: str, at: datetime) -> None:
        self.book.skip(self.book.touch(stage), reason, by_design)

    class StepsSkipped(TimedAggregate.Event):
        steps: list[list[Any]]
        by: str
        at: datetime

    @event(StepsSkipped)
    def _steps_skipped(self, steps: list[list[Any]], by: str, at: datetime) -> None:
        """[step, reason, by design] of steps whose every stage not yet begun was canceled, in the order decided."""
        for name, reason, by_design in steps:
            self.book.skip_step(self.book.steps[name], reason, by_design)  # a no-op while deciding: done already

    class Canceled(TimedAggregate.Event):
        reason: str
        by: str
        at: datetime

    @event(Canceled)
    def _canceled(self, reason: str, by: str, at: datetime) -> None:
        self.canceled_reason = reason
        self.book.cancel(f"Canceled by {by}: {reason}")

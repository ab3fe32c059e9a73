"""The Workflow aggregate: a submitted definition's stages, their dependencies, retries, cancel and status."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

import msgspec
from eventsourcing.domain import event

from domain.timed import TimedAggregate
from domain.fuzzfile import Stage, list_stages
from domain.fuzzfile.schema import Workflow as Definition
from domain.fuzzfile.semantics import StageStatus, condition, decide_exit, decide_node_loss, step_outcome

DEFAULT_MAX_EVICTION_RESTARTS = 3


class WorkflowError(Exception):
    """A command the workflow's current state does not allow; the message says why."""


class StageView(msgspec.Struct, frozen=True):
    """What a user sees of one stage."""

    name: str
    kind: str
    status: StageStatus
    attempt: int
    retries_used: int
    exit_code: int | None
    node: str | None
    reason: str


class ReadyStage(msgspec.Struct, frozen=True):
    """A stage the scheduler may allocate now, with the attempt number its allocation is for."""

    stage: Stage
    attempt: int
    preemptible: bool
    priority: int


class StageState:
    """Mutable per-stage state inside the aggregate (rebuilt from events, never stored itself)."""

    def __init__(self, spec: Stage) -> None:
        self.spec = spec
        self.status = StageStatus.WAITING if spec.dependencies else StageStatus.PENDING
        self.attempt = 1
        self.retries_used = 0
        self.node_retries_used = 0
        self.exit_code: int | None = None
        self.node: str | None = None
        self.reason = ""
        self.by_design = False

    def end(self, status: StageStatus, reason: str) -> None:
        self.status, self.reason = status, reason


class Workflow(TimedAggregate):
    @event("Submitted")
    def __init__(
        self, id: UUID, name: str, definition: dict[str, Any], owner: dict[str, str],
        priority: int, preemptible: bool | None, by: str, at: datetime,
    ) -> None:
        self.name, self.owner, self.priority, self.preemptible = name, owner, priority, preemptible
        self.submitted_by, self.submitted_at = by, at
        self.definition = msgspec.convert(definition, Definition)
        self.stages = {spec.name: StageState(spec) for spec in list_stages(self.definition)}
        self.canceled_reason: str | None = None

    @classmethod
    def submit(
        cls, id: UUID, name: str, definition: Definition, owner: dict[str, str], priority: int = 0,
        preemptible: bool | None = None, *, by: str, at: datetime,
    ) -> Workflow:
        """Start a workflow from a validated definition; stages whose conditions hold become READY at once."""
        if priority > 0:
            raise WorkflowError(f"workflow priority must be 0 or lower, got {priority}")
        workflow = cls(id=id, name=name, definition=msgspec.to_builtins(definition), owner=dict(owner),
                       priority=priority, preemptible=preemptible, by=by, at=at)
        workflow._advance(at)
        return workflow


    @property
    def status(self) -> str:
        """PENDING, STARTED, FINISHED, FAILED or CANCELED, derived from the stages."""
        if self.canceled_reason is not None:
            return "CANCELED"
        states = list(self.stages.values())
        if all(s.status.ended for s in states):
            failed = any(s.status is StageStatus.FAILED for s in states)
            skipped = any(s.status is StageStatus.CANCELED and not s.by_design for s in states)
            return "FAILED" if failed or skipped else "FINISHED"
        quiet = (StageStatus.PENDING, StageStatus.WAITING, StageStatus.READY)
        return "STARTED" if any(s.status not in quiet or s.attempt > 1 for s in states) else "PENDING"

    def stage(self, name: str) -> StageView:
        s = self._state(name)
        return StageView(name, s.spec.kind, s.status, s.attempt, s.retries_used, s.exit_code, s.node, self._reason(s))

    def stage_views(self) -> list[StageView]:
        return [self.stage(name) for name in self.stages]

    def ready_stages(self) -> list[ReadyStage]:
        """What may be allocated now (task arrays already limited to their concurrency)."""
        return [
            ReadyStage(s.spec, s.attempt, self._preemptible(s.spec), self.priority)
            for s in self.stages.values()
            if s.status is StageStatus.READY
        ]

    def services_to_stop(self) -> list[str]:
        """Non-persistent services still up although every job has ended."""
        jobs_done = all(s.status.ended for s in self.stages.values() if s.spec.kind != "service")
        return [n for n, s in self.stages.items() if jobs_done and s.spec.kind == "service"
                and not s.spec.persist and s.status in (StageStatus.STARTED, StageStatus.RUNNING)]

    def stage_started(self, stage: str, attempt: int, node: str, at: datetime, by: str = "agent") -> None:
        self._expect(stage, attempt, (StageStatus.READY,), "start")
        self._started(stage=stage, attempt=attempt, node=node, by=by, at=at)

    def stage_running(self, stage: str, attempt: int, at: datetime, by: str = "agent") -> None:
        """A service passed its readiness probe; dependents waiting for RUNNING may go."""
        state = self._expect(stage, attempt, (StageStatus.STARTED,), "mark running")
        if state.spec.kind != "service":
            raise WorkflowError(f"{stage} is a job; only services become RUNNING (after their readiness probe)")
        self._running(stage=stage, attempt=attempt, by=by, at=at)
        self._advance(at)

    def stage_exited(self, stage: str, attempt: int, exit_code: int, at: datetime, by: str = "agent") -> None:
        state = self._expect(stage, attempt, (StageStatus.STARTED, StageStatus.RUNNING), "exit")
        if exit_code == 0:
            self._finished(stage=stage, attempt=attempt, exit_code=0, reason="Finished", by=by, at=at)
        else:
            decision = decide_exit(state.spec.retry, exit_code, state.retries_used)
            self._retry_or_fail(state, attempt, decision, "exit", exit_code, by, at)
        self._advance(at)

    def stage_stopped(self, stage: str, attempt: int, at: datetime, by: str = "agent") -> None:
        """A service stopped because nothing needs it any more: that is its normal end."""
        self._expect(stage, attempt, (StageStatus.STARTED, StageStatus.RUNNING), "stop")
        self._finished(stage=stage, attempt=attempt, exit_code=None, reason="Stopped: no remaining dependents", by=by, at=at)
        self._advance(at)

    def stage_lost_node(
        self, stage: str, attempt: int, at: datetime,
        max_eviction_restarts: int = DEFAULT_MAX_EVICTION_RESTARTS, by: str = "agent",
    ) -> None:
        state = self._expect(stage, attempt, (StageStatus.STARTED, StageStatus.RUNNING), "lose its node")
        decision = decide_node_loss(state.spec.retry, state.retries_used, state.node_retries_used, max_eviction_restarts)
        self._retry_or_fail(state, attempt, decision, "node", None, by, at)
        self._advance(at)

    def stage_preempted(self, stage: str, attempt: int, at: datetime, by: str = "scheduler", requeue: bool = True) -> None:
        """Preemption requeues the stage as a new attempt without spending its retry budget, or abandons it."""
        self._expect(stage, attempt, (StageStatus.STARTED, StageStatus.RUNNING), "be preempted")
        if requeue:
            self._preempted(stage=stage, attempt=attempt, reason=f"Preempted; requeued as attempt {attempt + 1}", by=by, at=at)
        else:
            self._skipped(stage=stage, reason="Canceled: preempted and abandoned", by_design=False, by=by, at=at)
        self._advance(at)

    def cancel(self, by: str, at: datetime, reason: str = "") -> None:
        if self.status in ("FINISHED", "FAILED", "CANCELED"):
            raise WorkflowError(f"workflow {self.name} already ended {self.status}; nothing to cancel")
        self._canceled(reason=reason or "canceled", by=by, at=at)

    def _retry_or_fail(self, state: StageState, attempt: int, decision: Any, cause: str,
                       exit_code: int | None, by: str, at: datetime) -> None:
        stage = state.spec.name
        if decision.retry:
            self._retried(stage=stage, attempt=attempt, cause=cause, exit_code=exit_code, reason=decision.reason, by=by, at=at)
            return
        if "exhausted" in decision.reason or "maxEvictionRestarts" in decision.reason:
            self._exhausted(stage=stage, attempt=attempt, cause=cause, reason=decision.reason, by=by, at=at)
        self._failed(stage=stage, attempt=attempt, exit_code=exit_code, reason=decision.reason, by=by, at=at)

    def _advance(self, at: datetime) -> None:
        """Skip stages whose conditions can never hold, ready those whose conditions hold, until nothing moves."""
        moved = True
        while moved:
            moved = False
            for state in self.stages.values():
                if state.status in (StageStatus.PENDING, StageStatus.WAITING):
                    moved |= self._settle(state, at)

    def _settle(self, state: StageState, at: datetime) -> bool:
        verdicts = [condition(n.name, n.status, self._outcome(n.name)) for n in state.spec.dependencies]
        never = next((v for v in verdicts if v.never), None)
        if never is not None:
            self._skipped(stage=state.spec.name, reason=f"Canceled: {never.reason}", by_design=never.by_design,
                          by="workflow", at=at)
            return True
        if all(v.holds for v in verdicts) and self._has_slot(state.spec):
            self._readied(stage=state.spec.name, by="workflow", at=at)
            return True
        return False

    def _outcome(self, step: str) -> str:
        return step_outcome([s.status for s in self.stages.values() if s.spec.step == step])

    def _has_slot(self, spec: Stage) -> bool:
        if spec.kind != "task" or spec.concurrency is None:
            return True
        active = sum(1 for s in self.stages.values() if s.spec.step == spec.step and s.status.active)
        return active < spec.concurrency

    def _preemptible(self, spec: Stage) -> bool:
        for flag in (spec.preemptible, self.preemptible, self.definition.preemptible):
            if flag is not None:
                return flag
        return False

    def _state(self, name: str) -> StageState:
        if name not in self.stages:
            raise WorkflowError(f"workflow {self.name} has no stage named {name}")
        return self.stages[name]

    def _expect(self, name: str, attempt: int, allowed: tuple[StageStatus, ...], doing: str) -> StageState:
        state = self._state(name)
        if self.canceled_reason is not None:
            raise WorkflowError(f"workflow {self.name} was canceled; {name} cannot {doing}")
        if attempt != state.attempt:
            raise WorkflowError(f"{name} is on attempt {state.attempt}; a report for attempt {attempt} is stale")
        if state.status not in allowed:
            raise WorkflowError(f"{name} is {state.status.value}; it cannot {doing} now")
        return state

    def _reason(self, state: StageState) -> str:
        if state.reason:
            return state.reason
        if state.status is StageStatus.WAITING:
            needs = ", ".join(f"{n.name} {n.status}" for n in state.spec.dependencies)
            return f"Waiting for {needs}"
        if state.status is StageStatus.PENDING and state.spec.concurrency is not None:
            return f"Waiting for a task-array slot (concurrency {state.spec.concurrency})"
        return ""

    @event("StageReadied")
    def _readied(self, stage: str, by: str, at: datetime) -> None:
        self.stages[stage].status = StageStatus.READY

    @event("StageStarted")
    def _started(self, stage: str, attempt: int, node: str, by: str, at: datetime) -> None:
        state = self.stages[stage]
        state.status, state.node, state.reason = StageStatus.STARTED, node, ""

    @event("StageRunning")
    def _running(self, stage: str, attempt: int, by: str, at: datetime) -> None:
        self.stages[stage].status = StageStatus.RUNNING

    @event("StageFinished")
    def _finished(self, stage: str, attempt: int, exit_code: int | None, reason: str, by: str, at: datetime) -> None:
        state = self.stages[stage]
        state.exit_code = exit_code
        state.end(StageStatus.FINISHED, reason)

    @event("StageFailed")
    def _failed(self, stage: str, attempt: int, exit_code: int | None, reason: str, by: str, at: datetime) -> None:
        state = self.stages[stage]
        state.exit_code = exit_code
        state.end(StageStatus.FAILED, reason)

    @event("StageRetried")
    def _retried(self, stage: str, attempt: int, cause: str, exit_code: int | None, reason: str, by: str, at: datetime) -> None:
        state = self.stages[stage]
        state.status, state.reason, state.exit_code = StageStatus.READY, reason, exit_code
        state.attempt, state.retries_used = attempt + 1, state.retries_used + 1
        state.node_retries_used += cause == "node"

    @event("RetriesExhausted")
    def _exhausted(self, stage: str, attempt: int, cause: str, reason: str, by: str, at: datetime) -> None:
        self.stages[stage].reason = reason

    @event("StagePreempted")
    def _preempted(self, stage: str, attempt: int, reason: str, by: str, at: datetime) -> None:
        state = self.stages[stage]
        state.status, state.reason, state.attempt, state.node = StageStatus.READY, reason, attempt + 1, None

    @event("StageSkipped")
    def _skipped(self, stage: str, reason: str, by_design: bool, by: str, at: datetime) -> None:
        state = self.stages[stage]
        state.by_design = by_design
        state.end(StageStatus.CANCELED, reason)

    @event("Canceled")
    def _canceled(self, reason: str, by: str, at: datetime) -> None:
        self.canceled_reason = reason
        for state in self.stages.values():
            if not state.status.ended:
                state.end(StageStatus.CANCELED, f"Canceled by {by}: {reason}")

"""What a Workflow is told about its stages' attempts (started, running, exited, lost a node, preempted) and
how it decides, on a failure, between a retry and the end of the stage.

Methods of the aggregate (domain/workflow.py assigns each to the class), kept here by concept: each report is
checked against the attempt it names (a stale one is refused), then recorded by one of the aggregate's events.
`self` is the Workflow, so mypy checks every call against the aggregate.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from domain.fuzzfile import Stage
from domain.fuzzfile.hooks import PRE_HOOK_REASON
from domain.fuzzfile.images import BUILD
from domain.fuzzfile.semantics import RetryDecision, StageStatus, decide_exit, decide_node_loss, with_named_cause
from domain.fuzzfile.transfers import TRANSFER_KINDS
from domain.multinode import RANK_REASON
from domain.workflow_stages import StageState, WorkflowError

if TYPE_CHECKING:
    from domain.workflow import Workflow

DEFAULT_MAX_EVICTION_RESTARTS = 3
UP = (StageStatus.STARTED, StageStatus.RUNNING)


def exit_decision(template: Stage, exit_code: int, retries_used: int, told: str) -> RetryDecision:
    """Retry or fail a stage that exited `exit_code`. `told`, the agent's reason, replaces the exit code's words
    when the stage fails for a reason the agent knows better: a failed transfer or build, a failing pre hook,
    or the rank of a multinode job whose failure stopped the others."""
    decision = with_named_cause(decide_exit(template.retry, exit_code, retries_used), told, exit_code)
    if not told or decision.retry:
        return decision
    if template.kind in (*TRANSFER_KINDS, BUILD):
        return RetryDecision(False, f"Failed: {told}")
    if told.startswith(PRE_HOOK_REASON):
        return RetryDecision(False, f"Failed: {told} (exit {exit_code})")
    if told.startswith(RANK_REASON):
        return RetryDecision(False, f"Failed: {told}")
    return decision


def stage_started(self: Workflow, stage: str, attempt: int, node: str, at: datetime, by: str = "agent") -> None:
    if (refused := self.start_refusal(stage, attempt, node)) is not None:
        raise WorkflowError(refused)
    self._started(stage=stage, attempt=attempt, node=node, by=by, at=at)


def start_refusal(self: Workflow, stage: str, attempt: int, node: str) -> str | None:
    """Why the stage's attempt cannot start on `node` now (None: it can); changes nothing."""
    try:
        state = self._expect(stage, attempt, (StageStatus.READY,), "start")
    except WorkflowError as error:
        return str(error)
    return self._volume_refusal(stage, state.template, node)


def stage_running(self: Workflow, stage: str, attempt: int, at: datetime, by: str = "agent") -> None:
    """A service passed its readiness probe; dependents waiting for RUNNING may go."""
    state = self._expect(stage, attempt, (StageStatus.STARTED,), "mark running")
    if state.step.kind != "service":
        raise WorkflowError(f"{stage} is a job; only services become RUNNING (after their readiness probe)")
    self._running(stage=stage, attempt=attempt, by=by, at=at)
    self._advance(at, state.step)


def service_unready(self: Workflow, stage: str, attempt: int, reason: str, at: datetime, by: str = "agent") -> bool:
    """A ready service's readiness probe failed: it leaves its endpoint but keeps running (and stays RUNNING for
    its dependents). False when it was unready already."""
    state = self._expect(stage, attempt, (StageStatus.RUNNING,), "become unready")
    if state.unready:
        return False
    self._unready(stage=stage, attempt=attempt, reason=reason[:300], by=by, at=at)
    return True


def service_ready_again(self: Workflow, stage: str, attempt: int, at: datetime, by: str = "agent") -> bool:
    """An unready service's probe passes again; False when it was not unready (a repeated report)."""
    state = self._expect(stage, attempt, (StageStatus.RUNNING,), "become ready again")
    if not state.unready:
        return False
    self._ready_again(stage=stage, attempt=attempt, by=by, at=at)
    return True


def stage_exited(self: Workflow, stage: str, attempt: int, exit_code: int, at: datetime, by: str = "agent",
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


def transfer_progressed(self: Workflow, stage: str, attempt: int, text: str, at: datetime, by: str = "agent") -> None:
    """A running ingress or egress says how far it has come (the text is the agent's, at most 300 characters)."""
    state = self._expect(stage, attempt, (StageStatus.STARTED,), "report progress")
    if state.template.kind not in (*TRANSFER_KINDS, BUILD):
        raise WorkflowError(f"{stage} is a {state.template.kind}; "
                            "only ingress and egress report progress (and builds their steps)")
    self._progressed(stage=stage, attempt=attempt, text=text[:300], by=by, at=at)


def image_progressed(self: Workflow, stage: str, attempt: int, text: str, at: datetime, by: str = "agent") -> None:
    """The node pulls the stage's image, or has it ready (the text is the agent's, at most 300 characters)."""
    self._expect(stage, attempt, UP, "report its image")
    self._image_progressed(stage=stage, attempt=attempt, text=text[:300], by=by, at=at)


def stage_noted(self: Workflow, stage: str, attempt: int, text: str, at: datetime, by: str = "agent") -> None:
    """The node ran the stage but could not do all it was asked (e.g. set its memlock limit): said, not silent."""
    self._expect(stage, attempt, UP, "report a note")
    self._noted(stage=stage, attempt=attempt, text=text[:300], by=by, at=at)


def stage_stopped(self: Workflow, stage: str, attempt: int, at: datetime, by: str = "agent") -> None:
    """A service stopped because nothing needs it any more: that is its normal end."""
    state = self._expect(stage, attempt, UP, "stop")
    self._finished(stage=stage, attempt=attempt, exit_code=None, reason="Stopped: no remaining dependents", by=by, at=at)
    self._close_pool(state.step, at)
    self._advance(at, state.step)


def stage_lost_node(
    self: Workflow, stage: str, attempt: int, at: datetime,
    max_eviction_restarts: int = DEFAULT_MAX_EVICTION_RESTARTS, by: str = "agent", cause: str = "",
) -> None:
    """`cause`: why its node went (an eviction's hold reason, a removal), named instead of 'lost its node'."""
    state = self._expect(stage, attempt, UP, "lose its node")
    decision = decide_node_loss(state.template.retry, state.retries_used, state.node_retries_used, max_eviction_restarts)
    if cause and not decision.retry:
        decision = RetryDecision(False, decision.reason.replace("lost its node", cause, 1))
    self._retry_or_fail(state, attempt, decision, "node", None, by, at)
    self._advance(at, state.step)


def stage_preempted(self: Workflow, stage: str, attempt: int, at: datetime, by: str = "scheduler",
                    requeue: bool = True) -> None:
    """Preemption requeues the stage as a new attempt without spending its retry budget, or abandons it."""
    state = self._expect(stage, attempt, UP, "be preempted")
    if requeue:
        self._preempted(stage=stage, attempt=attempt, reason=f"Preempted; requeued as attempt {attempt + 1}", by=by, at=at)
    else:
        self._skipped(stage=stage, reason="Canceled: preempted and abandoned", by_design=False, by=by, at=at)
    self._advance(at, state.step)


def cancel(self: Workflow, by: str, at: datetime, reason: str = "") -> None:
    if self.status in ("FINISHED", "FAILED", "CANCELED"):
        raise WorkflowError(f"workflow {self.name} already ended {self.status}; nothing to cancel")
    self._canceled(reason=reason or "canceled", by=by, at=at)


def _retry_or_fail(self: Workflow, state: StageState, attempt: int, decision: RetryDecision, cause: str,
                   exit_code: int | None, by: str, at: datetime) -> None:
    stage = state.name
    if decision.retry:
        self._retried(stage=stage, attempt=attempt, cause=cause, exit_code=exit_code, reason=decision.reason, by=by, at=at)
        return
    if "exhausted" in decision.reason or "maxEvictionRestarts" in decision.reason:
        self._exhausted(stage=stage, attempt=attempt, cause=cause, reason=decision.reason, by=by, at=at)
    self._failed(stage=stage, attempt=attempt, exit_code=exit_code, reason=decision.reason, by=by, at=at)


def _expect(self: Workflow, name: str, attempt: int, allowed: tuple[StageStatus, ...], doing: str) -> StageState:
    state = self._state(name)
    if self.canceled_reason is not None:
        raise WorkflowError(f"workflow {self.name} was canceled; {name} cannot {doing}")
    if attempt != state.attempt:
        raise WorkflowError(f"{name} is on attempt {state.attempt}; a report for attempt {attempt} is stale")
    if state.status not in allowed:
        raise WorkflowError(f"{name} is {state.status.value}; it cannot {doing} now")
    return state

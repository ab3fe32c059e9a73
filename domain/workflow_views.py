"""What a Workflow shows: its stages' views, the stages the scheduler may allocate now, and why a stage waits.

Methods of the aggregate (domain/workflow.py assigns each to the class), kept here by concept; they read its
state and change nothing. `self` is the Workflow, so mypy checks every attribute read against the aggregate.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from domain.fuzzfile import Stage
from domain.fuzzfile.semantics import StageStatus
from domain.workflow_stages import ReadyStage, StageState, StageView, WorkflowError

if TYPE_CHECKING:
    from domain.workflow import Workflow

MAKES_READY = ("StageReadied", "StageRetried", "StagePreempted")


def stage(self: Workflow, name: str) -> StageView:
    return self._view(self._state(name))


def _view(self: Workflow, s: StageState) -> StageView:
    return StageView(s.name, s.step.kind, s.status, s.attempt, s.retries_used, s.exit_code, s.node, self._reason(s))


def stage_views(self: Workflow) -> list[StageView]:
    return [self._view(s) for s in self.book.states()]


def step_specs(self: Workflow) -> list[Stage]:
    """One spec per job, service and task array (an array's template): what every stage of it asks for."""
    return [step.definition.template for step in self.book.order]


def live_stage_views(self: Workflow) -> list[StageView]:
    """READY, STARTED and RUNNING stages only: what may hold an allocation."""
    return [self._view(s) for s in self.book.in_order(self.book.live.values())]


def ready_stages(self: Workflow) -> list[ReadyStage]:
    """What may be allocated now (task arrays already limited to their concurrency)."""
    ready = [s for s in self.book.live.values() if s.status is StageStatus.READY]
    return [self._ready(s) for s in self.book.in_order(ready)]


def newly_ready(self: Workflow) -> list[ReadyStage]:
    """Stages made READY by events not yet saved: each is a new attempt, so none has an allocation yet."""
    pending: list[Any] = self.pending_events  # Workflow's own events, made by the metaclass: unknown to mypy
    names = dict.fromkeys(e.stage for e in pending if type(e).__name__ in MAKES_READY)
    states = [self.book.live.get(name) for name in names]
    return [self._ready(s) for s in states if s is not None and s.status is StageStatus.READY]


def service_of(self: Workflow, stage: str) -> str:
    """The job or service a stage belongs to (`web` for replica `web[2]`)."""
    return self._state(stage).template.step


def live_replicas(self: Workflow, service: str) -> list[str]:
    """The stages of `service` that are READY, STARTED or RUNNING."""
    return [s.name for s in self.book.live.values() if s.template.step == service and s.step.kind == "service"]


def _ready(self: Workflow, state: StageState) -> ReadyStage:
    spec = state.spec
    return ReadyStage(spec, state.attempt, self._preemptible(spec), self.priority)


def _preemptible(self: Workflow, spec: Stage) -> bool:
    for flag in (spec.preemptible, self.preemptible, self.definition.preemptible):
        if flag is not None:
            return flag
    return False


def _state(self: Workflow, name: str) -> StageState:
    if name not in self.book:
        raise WorkflowError(f"workflow {self.name} has no stage named {name}")
    return self.book[name]


def _reason(self: Workflow, state: StageState) -> str:
    if state.reason:
        return state.reason
    template = state.template
    if state.status is StageStatus.WAITING:
        needs = ", ".join(f"{n.name} {n.status}" for n in template.dependencies)
        return f"Waiting for {needs}"
    if state.status is StageStatus.PENDING and template.concurrency is not None:
        return f"Waiting for a task-array slot (concurrency {template.concurrency})"
    return ""

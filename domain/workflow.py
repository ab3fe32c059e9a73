"""The Workflow aggregate: a submitted definition's stages, their dependencies, retries, cancel and status.

This module holds the aggregate's state, its creation and its events (each one's effect on the state). The
commands and queries are functions of the modules beside it, each a concept: what it shows (workflow_views), what
it is told of its stages' attempts and how it retries (workflow_reports), how it moves stages on (workflow_advance),
and its service pools and volumes (workflow_resources). They are methods here by assignment, so this class lists
its whole surface and mypy checks each against it (a mixin cannot name the aggregate as its `self` type).
Every event class stays nested in `Workflow` here, so the topics stored in the log (`domain.workflow:Workflow.
StageStarted`) are the ones this class has always had (tests/unit/workflow/test_workflow_golden.py replays them).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

import msgspec
from eventsourcing.domain import event

from domain import workflow_advance as advance
from domain import workflow_reports as reports
from domain import workflow_resources as resources
from domain import workflow_views as views
from domain.fuzzfile.autoscaler import initial_size
from domain.fuzzfile.schema import Workflow as Definition
from domain.fuzzfile.semantics import StageStatus
from domain.fuzzfile.stages import list_steps
from domain.timed import TimedAggregate
from domain.workflow_book import StageBook
from domain.workflow_reports import DEFAULT_MAX_EVICTION_RESTARTS
from domain.workflow_resources import volumes_of
from domain.workflow_stages import ReadyStage, StageState, StageView, StepState, WorkflowError

__all__ = [
    "DEFAULT_MAX_EVICTION_RESTARTS", "ReadyStage", "StageView", "Workflow", "WorkflowError", "volumes_of",
]


class Workflow(TimedAggregate):
    unchanging = ("definition", "owner")  # the parsed definition and the owner never change after submission
    takes_turns = True  # the scheduler's placements and the agents' reports change it at once

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        for step in self.book.order:  # each step's parsed definition is the submission's, shared
            memo[id(step.definition)] = step.definition
        return super().__deepcopy__(memo)

    @event("Submitted")
    def __init__(
        self, id: UUID, name: str, definition: dict[str, Any], owner: dict[str, str],
        priority: int, preemptible: bool | None, by: str, at: datetime,
    ) -> None:
        self.name, self.owner, self.priority, self.preemptible = name, owner, priority, preemptible
        self.submitted_by, self.submitted_at = by, at
        self.definition = msgspec.convert(definition, Definition)
        self.book = StageBook(list_steps(self.definition))
        self.canceled_reason: str | None = None
        for name, service in (self.definition.services or {}).items():
            if service.autoscaler is not None:
                self.book.steps[name].limit = initial_size(service)

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
        workflow._advance(at, *workflow.book.order)
        return workflow

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
        return self.__dict__.setdefault("_volume_nodes", {})

    @property
    def volume_bindings(self) -> dict[str, dict[str, Any]]:
        """Persistent volume name -> its binding (domain.volumes.Binding as a dict), fixed at submission."""
        return self.__dict__.setdefault("_volume_bindings", {})

    # What it shows (read only): domain/workflow_views.py
    stage = views.stage
    _view = views._view
    stage_views = views.stage_views
    step_specs = views.step_specs
    live_stage_views = views.live_stage_views
    ready_stages = views.ready_stages
    newly_ready = views.newly_ready
    service_of = views.service_of
    live_replicas = views.live_replicas
    _ready = views._ready
    _preemptible = views._preemptible
    _state = views._state
    _reason = views._reason

    # Its stages' attempts reported, retried or failed; cancel: domain/workflow_reports.py
    stage_started = reports.stage_started
    start_refusal = reports.start_refusal
    stage_running = reports.stage_running
    service_unready = reports.service_unready
    service_ready_again = reports.service_ready_again
    stage_exited = reports.stage_exited
    transfer_progressed = reports.transfer_progressed
    image_progressed = reports.image_progressed
    stage_noted = reports.stage_noted
    stage_stopped = reports.stage_stopped
    stage_lost_node = reports.stage_lost_node
    stage_preempted = reports.stage_preempted
    cancel = reports.cancel
    _retry_or_fail = reports._retry_or_fail
    _expect = reports._expect

    # Autoscaled service pools and volumes: domain/workflow_resources.py
    pools = resources.pools
    scale_service = resources.scale_service
    services_to_stop = resources.services_to_stop
    services_never_needed = resources.services_never_needed
    stage_not_needed = resources.stage_not_needed
    _close_pool = resources._close_pool
    bind_volumes = resources.bind_volumes
    _node_volumes = resources._node_volumes
    _volume_refusal = resources._volume_refusal

    # Moving stages on after every change: domain/workflow_advance.py
    _advance = advance._advance
    _settle = advance._settle
    _flush_skips = advance._flush_skips

    @event("VolumesBound")
    def _volumes_bound(self, bindings: dict[str, dict[str, Any]], by: str, at: datetime) -> None:
        self.__dict__["_volume_bindings"] = dict(bindings)

    @event("StageReadied")
    def _readied(self, stage: str, by: str, at: datetime) -> None:
        state = self.book.touch(stage)
        if state.offset in state.step.parked:  # a scaled-down replica starts again
            state.reason = ""
        self.book.move(state, StageStatus.READY)

    @event("ServiceScaled")
    def _scaled(self, service: str, from_size: int, to_size: int, reason: str, stopped: list[str], by: str,
                at: datetime) -> None:
        step = self.book.steps[service]
        step.limit, step.scaled_at = to_size, at
        for name in stopped:  # a new attempt when started again: reports of the stopped one are stale
            state = self.book.touch(name)
            state.reason, state.attempt, state.node, state.unready = f"Scaled down: {reason}", state.attempt + 1, None, False
            self.book.move(state, StageStatus.PENDING)
            step.parked.add(state.offset)

    @event("StageStarted")
    def _started(self, stage: str, attempt: int, node: str, by: str, at: datetime) -> None:
        state = self.book.touch(stage)
        for volume in self._node_volumes(state.template):
            self.volume_nodes.setdefault(volume, node)
        state.node, state.reason = node, ""
        self.book.move(state, StageStatus.STARTED)

    @event("TransferProgressed")
    def _progressed(self, stage: str, attempt: int, text: str, by: str, at: datetime) -> None:
        pass  # told, not kept: the activity stream shows it

    @event("ImageProgressed")
    def _image_progressed(self, stage: str, attempt: int, text: str, by: str, at: datetime) -> None:
        pass  # told, not kept: the activity stream shows it

    @event("StageNoted")
    def _noted(self, stage: str, attempt: int, text: str, by: str, at: datetime) -> None:
        pass  # told, not kept: the activity stream shows it

    @event("StageRunning")
    def _running(self, stage: str, attempt: int, by: str, at: datetime) -> None:
        state = self.book.touch(stage)
        state.unready = False
        self.book.move(state, StageStatus.RUNNING)

    @event("ServiceUnready")
    def _unready(self, stage: str, attempt: int, reason: str, by: str, at: datetime) -> None:
        state = self.book.touch(stage)
        state.unready, state.reason = True, f"Unready: {reason}"

    @event("ServiceReadyAgain")
    def _ready_again(self, stage: str, attempt: int, by: str, at: datetime) -> None:
        state = self.book.touch(stage)
        state.unready, state.reason = False, ""

    @event("StageFinished")
    def _finished(self, stage: str, attempt: int, exit_code: int | None, reason: str, by: str, at: datetime) -> None:
        state = self.book.touch(stage)
        state.exit_code, state.reason = exit_code, reason
        self.book.move(state, StageStatus.FINISHED)

    @event("StageFailed")
    def _failed(self, stage: str, attempt: int, exit_code: int | None, reason: str, by: str, at: datetime) -> None:
        state = self.book.touch(stage)
        state.exit_code, state.reason = exit_code, reason
        self.book.move(state, StageStatus.FAILED)

    @event("StageRetried")
    def _retried(self, stage: str, attempt: int, cause: str, exit_code: int | None, reason: str, by: str, at: datetime) -> None:
        state = self.book.touch(stage)
        state.reason, state.exit_code = reason, exit_code
        state.attempt, state.retries_used = attempt + 1, state.retries_used + 1
        state.node_retries_used += cause == "node"
        self.book.move(state, StageStatus.READY)

    @event("RetriesExhausted")
    def _exhausted(self, stage: str, attempt: int, cause: str, reason: str, by: str, at: datetime) -> None:
        self.book.touch(stage).reason = reason

    @event("StagePreempted")
    def _preempted(self, stage: str, attempt: int, reason: str, by: str, at: datetime) -> None:
        state = self.book.touch(stage)
        state.reason, state.attempt, state.node = reason, attempt + 1, None
        self.book.move(state, StageStatus.READY)

    @event("StageSkipped")
    def _skipped(self, stage: str, reason: str, by_design: bool, by: str, at: datetime) -> None:
        self._skip_stage(self.book.touch(stage), reason, by_design)

    @event("StepsSkipped")
    def _steps_skipped(self, steps: list[list[Any]], by: str, at: datetime) -> None:
        """[step, reason, by design] of steps whose every stage not yet begun was canceled, in the order decided."""
        for name, reason, by_design in steps:
            self._skip_step(self.book.steps[name], reason, by_design)  # a no-op while deciding: done already

    def _skip_step(self, step: StepState, reason: str, by_design: bool) -> None:
        while (offset := step.next_free()) is not None:
            self._skip_stage(self.book.touch(step.definition.stage_name(offset)), reason, by_design)

    def _skip_stage(self, state: StageState, reason: str, by_design: bool) -> None:
        state.by_design, state.reason = by_design, reason
        self.book.accidental_skips += not by_design
        self.book.move(state, StageStatus.CANCELED)

    @event("Canceled")
    def _canceled(self, reason: str, by: str, at: datetime) -> None:
        self.canceled_reason = reason
        self.book.cancel(f"Canceled by {by}: {reason}")

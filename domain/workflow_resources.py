"""What a Workflow holds beyond its stages: its autoscaled service pools and the nodes its volumes live on.

Methods of the aggregate (domain/workflow.py assigns each to the class), kept here by concept; the events that
change these (ServiceScaled, VolumesBound, StageStarted) are the aggregate's own. `self` is the Workflow, so mypy
checks every attribute against the aggregate.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from domain.autoscale import Pool, pool_rule
from domain.fuzzfile import Stage
from domain.fuzzfile.semantics import StageStatus
from domain.fuzzfile.transfers import mounted_volumes
from domain.workflow_stages import StepState, WorkflowError

if TYPE_CHECKING:
    from domain.workflow import Workflow


def volumes_of(spec: Stage) -> list[str]:
    """The volumes a stage uses: those it mounts, or the one its ingress or egress moves files for."""
    return [spec.volume] if spec.volume else mounted_volumes(spec.mounts)


def pools(self: Workflow) -> list[Pool]:
    """Every autoscaled service of a workflow still running: its size, rule and last scale step."""
    if self.canceled_reason is not None:
        return []
    found = []
    for name, service in (self.definition.services or {}).items():
        step, rule = self.book.steps[name], pool_rule(service)
        if rule is not None and step.limit is not None and step.outcome() in ("OPEN", "RUNNING"):
            found.append(Pool(name, step.limit, rule, step.scaled_at))
    return found


def scale_service(self: Workflow, service: str, to: int, reason: str, at: datetime, by: str = "autoscaler") -> list[str]:
    """Grow or shrink an autoscaled pool to `to` replicas. Shrinking stops the highest-numbered live replicas
    (they wait, PENDING, to be the first started again); growing readies the next ones. Returns the stages
    stopped (their allocations are the caller's to cancel)."""
    step = self.book.steps.get(service)
    rule = pool_rule((self.definition.services or {})[service]) if step is not None and step.kind == "service" else None
    if step is None or rule is None or step.limit is None:
        raise WorkflowError(f"workflow {self.name} has no autoscaled service named {service}")
    if self.canceled_reason is not None or step.outcome() not in ("OPEN", "RUNNING"):
        raise WorkflowError(f"service {service} of workflow {self.name} has ended; it cannot scale")
    if not rule.low <= to <= rule.high:
        raise WorkflowError(f"service {service} scales between {rule.low} and {rule.high} replicas, not to {to}")
    live = sorted((s for s in self.book.live.values() if s.step is step), key=lambda s: s.offset)
    stopped = [s.name for s in live[to:]][::-1]
    self._scaled(service=service, from_size=step.limit, to_size=to, reason=reason, stopped=stopped, by=by, at=at)
    self._advance(at, step)
    return stopped


def services_to_stop(self: Workflow) -> list[str]:
    """Non-persistent services still up although every job has ended."""
    if self.book.open_jobs:
        return []
    services = [s for step in self.book.order if step.kind == "service" for s in step.touched.values()]
    return [s.name for s in services if not s.template.persist
            and s.status in (StageStatus.STARTED, StageStatus.RUNNING)]


def services_never_needed(self: Workflow) -> list[str]:
    """Non-persistent services that have not started although every job has ended: waiting for a node (a quota, a
    reservation) or for their own dependencies. Nothing can need them any more; started later, they would run on
    alone and the workflow would never end. A workflow of services alone runs them until it is stopped."""
    if self.book.open_jobs or all(step.kind == "service" for step in self.book.order):
        return []
    waiting = (StageStatus.PENDING, StageStatus.WAITING, StageStatus.READY)
    return [state.name for step in self.book.order if step.kind == "service"
            for state in (step.state(offset, self.book.canceled) for offset in range(step.definition.size))
            if state.status in waiting and not state.template.persist]


def stage_not_needed(self: Workflow, stage: str, at: datetime, by: str = "scheduler") -> None:
    """A service that never started ends as a stopped one does: nothing needs it."""
    state = self._state(stage)
    self._finished(stage=stage, attempt=state.attempt, exit_code=None,
                   reason="Stopped: every job ended before it started", by=by, at=at)
    self._advance(at, state.step)


def _close_pool(self: Workflow, step: StepState, at: datetime) -> None:
    """The last live replica of an autoscaled pool stopped: its stages not running end too."""
    if step.limit is None or any(s.step is step for s in self.book.live.values()):
        return
    while (offset := step.next_free()) is not None:
        name = step.definition.stage_name(offset)
        self._finished(stage=name, attempt=self.book[name].attempt, exit_code=None,
                       reason=f"Stopped: not needed (the pool ran {step.limit})", by="workflow", at=at)


def bind_volumes(self: Workflow, bindings: dict[str, dict[str, Any]], by: str, at: datetime) -> None:
    """Record where the persistent volumes live (a VolumesBound event; none, no event)."""
    if bindings:
        self._volumes_bound(bindings=bindings, by=by, at=at)


def _node_volumes(self: Workflow, spec: Stage) -> list[str]:
    """The volumes that live on one node (ephemeral ones): a persistent volume is the provisioner's directory,
    which every node that may run the stage sees, so it pins no stage anywhere."""
    bound = self.volume_bindings
    return [v for v in volumes_of(spec) if v not in bound]


def _volume_refusal(self: Workflow, stage: str, spec: Stage, node: str) -> str | None:
    """Why `stage` cannot start on `node`: a volume it mounts lives on another node (None: no such volume)."""
    for volume in self._node_volumes(spec):
        if (held := self.volume_nodes.get(volume, node)) != node:
            return f"{stage} mounts volume {volume}, which lives on node {held}, not {node}"
    return None

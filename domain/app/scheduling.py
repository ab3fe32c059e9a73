"""Allocation and scheduling handlers: the scheduler's place, preempt and blocked causes, and the submission check
that refuses work no node could ever hold."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from domain.allocation import Allocation, IllegalTransition
from domain.app.allocations import Allocations
from domain.app.config import ConfigHandlers
from domain.app.errors import Conflict, Invalid, NotFound
from domain.app.profiles import ProfileHandlers
from domain.app.read_models import ReadModels
from domain.app.unit_of_work import UnitOfWork, command
from domain.fuzzfile import Problem
from domain.node import Node
from domain.quantities import human_bytes
from domain.scheduler.feasibility import Infeasible, check_feasible
from domain.scheduler.reasons import Why
from domain.scheduler.snapshot import Definition, QueuedAllocation
from domain.workflow import Workflow, WorkflowError

# A blocked cause's message and cause key are cut to these lengths: they come from node holds, annotations and other
# text people write, and one event must stay within JetStream's message limit (1 MiB). A pass's causes are committed
# in groups of about COMMIT_TEXT characters of them, each group one atomic commit, so no commit's size grows with
# how many allocations are blocked or how long their reasons are.
MAX_BLOCKED_MESSAGE = 4_000
MAX_BLOCKED_CAUSE = 1_000
COMMIT_TEXT = 256 * 1024
CUT = " … (cut)"


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - len(CUT)] + CUT


class SchedulingHandlers:
    def __init__(self, uow: UnitOfWork, allocations: Allocations, config: ConfigHandlers,
                 read_models: ReadModels, profiles: ProfileHandlers | None = None) -> None:
        self.uow, self.allocations, self.config, self.read_models = uow, allocations, config, read_models
        self.profiles = profiles or ProfileHandlers(uow)

    @command
    def place(self, allocation: UUID, node_ids: list[UUID], by: str, at: datetime, note: str = "") -> int:
        touched: list[Any] = []
        epoch = self._place_one(allocation, node_ids, by, at, touched, note)
        self.uow.save(*touched)
        return epoch

    @command
    def place_all(self, placements: Sequence[tuple[UUID, list[UUID]]], by: str, at: datetime) -> dict[UUID, int | str]:
        """A scheduler pass's placements in one commit: each one's epoch, or why it was refused (a refused placement
        changes nothing; the others go ahead). A lost race decides every one again on fresh state."""
        outcome: dict[UUID, int | str] = {}
        touched: list[Any] = []
        for allocation, node_ids in placements:
            try:
                outcome[allocation] = self._place_one(allocation, node_ids, by, at, touched)
            except (Conflict, NotFound) as error:
                outcome[allocation] = str(error)
        self.uow.save(*touched)
        return outcome

    def _place_one(self, allocation: UUID, node_ids: list[UUID], by: str, at: datetime, touched: list[Any],
                   note: str = "") -> int:
        """Place one allocation in the running command, or refuse it (Conflict) having changed nothing."""
        alloc = self.uow.load(Allocation, allocation, "allocation")
        workflow = self.uow.load(Workflow, alloc.workflow_id, "workflow")
        nodes = [self.uow.load(Node, n, "node") for n in node_ids]
        self.profiles.check_current(workflow.stages[alloc.stage].spec)  # moved: refused, it stays queued
        # The nodes are read, not written: whether the work fits is the leader's view (its only placer); a hold or a
        # lost lease that lands after this read is swept by the next pass (domain.app.strays).
        refusals = [alloc.placement_refusal([str(n) for n in node_ids]),
                    *(node.placement_refusal() for node in nodes),
                    workflow.start_refusal(alloc.stage, alloc.attempt, nodes[0].name) if nodes else None,
                    self.allocations.ledgers.refusal(alloc, workflow, nodes, by, at)]  # quotas, licenses: exact here
        if (refused := next((r for r in refusals if r is not None), None)) is not None:
            raise Conflict(f"cannot place {alloc.stage}: {refused}")
        try:
            epoch = alloc.place([str(n) for n in node_ids], by=by, at=at, note=note,
                                node_epochs=tuple(node.epoch for node in nodes))
            # One message where the rules allow: the workflow learns of the start with the attempt's first report
            # (Allocations.learn_start); a start that binds volumes to its node is recorded now, for the next stage.
            binds = workflow.start_binds_volumes(alloc.stage)
            if binds:
                workflow.stage_started(alloc.stage, alloc.attempt, nodes[0].name, at=at, by=by)
            ledgers = self.allocations.ledgers.charge(alloc, workflow, nodes, by, at)
        except (IllegalTransition, WorkflowError, Conflict) as error:  # checked above: a rule they missed
            raise AssertionError(f"placing {alloc.stage} broke a rule its checks passed: {error}") from error
        touched += [alloc, *([workflow] if binds else []), *ledgers]
        return epoch

    @command
    def preempt(self, victim: UUID, text: str, by: str, at: datetime) -> None:
        alloc = self.uow.load(Allocation, victim, "allocation")
        workflow = self.uow.load(Workflow, alloc.workflow_id, "workflow")
        self.allocations.learn_start(workflow, alloc, at)
        alloc.preempt(text, by=by, at=at)
        workflow.stage_preempted(alloc.stage, alloc.attempt, at=at, by=by, requeue=True)
        self.uow.save(alloc, workflow, *self.allocations.release(alloc, by, at),
                      *self.allocations.request_ready(workflow, by, at))

    @command
    def record_blocked(self, allocation: UUID, why: Why, by: str, at: datetime) -> bool:
        """One `SchedulingBlocked` event for a new cause; False when there was nothing new to say."""
        alloc = self.uow.load(Allocation, allocation, "allocation")
        if not alloc.record_blocked(why.reason.value, why.message, why.cause(), by=by, at=at):
            return False
        self.uow.save(alloc)
        return True

    @command
    def record_blocked_all(self, blocked: Sequence[tuple[UUID, Why]], by: str, at: datetime) -> int:
        """A pass's new causes in as few commits as their size allows: how many allocations got a `SchedulingBlocked`
        event (one that ended or went meanwhile is passed over)."""
        group: list[Any] = []
        written = size = 0
        for allocation, why in blocked:
            try:
                alloc = self.uow.load(Allocation, allocation, "allocation")
            except NotFound:
                continue
            message, cause = cut(why.message, MAX_BLOCKED_MESSAGE), cut(why.cause(), MAX_BLOCKED_CAUSE)
            if alloc.ended or not alloc.record_blocked(why.reason.value, message, cause, by=by, at=at):
                continue
            if group and size + len(message) + len(cause) > COMMIT_TEXT:
                self.uow.save(*group)
                written, group, size = written + len(group), [], 0
            group.append(alloc)
            size += len(message) + len(cause)
        self.uow.save(*group)
        return written + len(group)

    def check_feasible_submission(self, workflow: Workflow, definitions: Sequence[Definition] | None) -> None:
        """Refuse stages no node of any definition could hold even when idle; no definitions: accept."""
        if definitions is None:
            definitions = self.read_models.node_definitions()
        if not definitions:
            return
        ignored = self.config.scheduler_config().ignored_annotations
        problems, seen = [], set()
        for state in workflow.stages.values():
            spec = state.spec
            path = f"{'services' if spec.kind == 'service' else 'jobs'}.{spec.step}.resource"
            if spec.build is not None:
                path = f"images.{spec.build.name}"
            if path in seen:
                continue
            refused = check_feasible(_request(workflow, spec), definitions, ignored)
            if refused is not None:
                seen.add(path)
                problems.append(Problem(path=path, message=infeasible_text(refused)))
        if problems:
            raise Invalid(problems)


def _request(workflow: Workflow, spec: Any) -> QueuedAllocation:
    r = spec.resources
    return QueuedAllocation(id=spec.name, workflow_id=str(workflow.id), stage=spec.name,
                            submitted_at=workflow.submitted_at, cpu=r.cpu_cores, memory=r.memory_bytes,
                            devices=dict(r.devices), annotations=dict(r.annotations), exclusive=r.exclusive,
                            nodes=r.nodes)


def infeasible_text(refused: Infeasible) -> str:
    """What was asked, the largest node there is, and why each definition was passed over."""
    request, largest = refused.request, refused.largest_node
    asked = _shape(request) + f" on {request['nodes']} node{'s' if request['nodes'] != 1 else ''}"
    if request["annotations"]:
        asked += ", annotations " + ", ".join(f"{k}={v}" for k, v in sorted(request["annotations"].items()))
    named = f"{largest['node']}, in {largest['definition']}" if largest and largest.get("node") else \
        (largest or {}).get("definition")
    biggest = f"the largest node ({named}) has {_shape(largest)}" if largest else "no nodes"
    why = "; ".join(f"{d}: {r}" for d, r in refused.rejections.items())
    return f"no node can ever hold this job: it asks {asked}; {biggest}; passed over: {why}"


def _shape(values: dict[str, Any]) -> str:
    text = f"cpu {values['cpu']}, memory {human_bytes(values['memory'])}"
    devices = values.get("devices") or {}
    return text + ("".join(f", {name} x{count}" for name, count in sorted(devices.items())))

"""What several commands do to allocations: request them for ready stages, release, lose, stop, reprioritize.

Not commands of their own: each runs inside its caller's unit of work and returns what it touched, for the
caller to save in the same commit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from domain.allocation import Allocation, QueueState
from domain.app.config import ConfigHandlers
from domain.app.errors import Conflict
from domain.app.ids import allocation_id
from domain.app.ledgers import Ledgers
from domain.app.read_models import ReadModels
from domain.app.unit_of_work import UnitOfWork
from domain.fuzzfile.semantics import StageStatus
from domain.workflow import Workflow

LIVE = (StageStatus.READY, StageStatus.STARTED, StageStatus.RUNNING)
SAVE_CHUNK = 256  # allocations per atomic save: JetStream caps an atomic batch at 1,000 messages
PLACED_TOPIC = "domain.allocation:Allocation.Placed"


class Allocations:
    def __init__(self, uow: UnitOfWork, config: ConfigHandlers, read_models: ReadModels) -> None:
        self.uow, self.config, self.read_models = uow, config, read_models
        self.ledgers = Ledgers(uow, config)
        # (workflow, stage, reason, at) -> what it touched: a service's endpoints stop sending to a lost node
        self.service_lost: Callable[[Workflow, str, str, datetime], list[Any]] = lambda *_: []

    def request_ready(self, workflow: Workflow, by: str, at: datetime, fresh: bool = False) -> list[Allocation]:
        """An allocation for every ready stage attempt that has none yet (ids are deterministic).

        A workflow being submitted (`fresh`) has no allocations yet, so nothing is looked up."""
        created: list[Allocation] = []
        ready_stages = workflow.ready_stages()
        priorities = self.owner_priorities(workflow.owner) if ready_stages else {}  # a stage that ended has none
        for ready in ready_stages:
            aid = allocation_id(workflow.id, ready.stage.name, ready.attempt)
            repository = self.uow.repository
            if not fresh and not repository.presumed_new(aid) and aid in repository:
                continue
            alloc = Allocation.request(
                aid, workflow.id, ready.stage.name, ready.attempt, ready.stage.resources,
                workflow_priority=workflow.priority, preemptible=ready.preemptible,
                execute_timeout_seconds=ready.stage.execute_timeout_seconds, by=by, at=at, **priorities,
                profile=ready.stage.profile, profile_revision=ready.stage.profile_revision, ready=True)
            created.append(alloc)
        return created

    def live_of(self, workflow: Workflow) -> list[Allocation]:
        found = []
        for view in workflow.stage_views():
            if view.status in LIVE:
                alloc = self._live(allocation_id(workflow.id, view.name, view.attempt))
                if alloc is not None:
                    found.append(alloc)
        return found

    def learn_start(self, workflow: Workflow, alloc: Allocation, at: datetime) -> None:
        """A placement writes only its allocation (issue 43): its workflow learns of the start with the first word on
        the attempt (a report, a loss, a preemption, a stop), in that commit. Recorded `at` that word's time, so a
        workflow's events stay in time order (cold reads merge them by time); views show the start from the
        allocation's `Placed`."""
        view = workflow.stage(alloc.stage)
        if view.status is not StageStatus.READY or view.attempt != alloc.attempt or not alloc.nodes:
            return
        workflow.stage_started(alloc.stage, alloc.attempt, self.node_name(alloc.nodes[0]), at=at, by="scheduler")

    def node_name(self, node: str) -> str:
        nid = UUID(node)
        return self.uow.repository.get(nid).name if nid in self.uow.repository else node

    def release(self, alloc: Allocation, by: str, at: datetime) -> list[Any]:
        """The ledgers of the allocation's quotas and shared resources, given back, and its nodes that a deprovision
        hold removes now that their last work ended. A node's capacity is no Node event: the scheduler's view frees it
        from the allocation's own end."""
        emptied: list[Any] = []
        for nid in alloc.nodes:
            node = self.uow.repository.get(UUID(nid)) if UUID(nid) in self.uow.repository else None
            if node is not None and getattr(node, "awaits_deprovision", False):
                others = [a for a in self.on_node(node.id) if a != str(alloc.id)]
                if node.deprovision_emptied(others, by=by, at=at):
                    emptied.append(node)
        return emptied + self.ledgers.discharge(alloc, by, at)

    def on_node(self, node: UUID) -> list[str]:
        """The allocations running on a node, as the read model says; a placement it does not show yet is swept by
        the scheduler's pass (domain.app.strays). Without read models (tools, tests), from the log's placements."""
        known = getattr(self.read_models, "allocations_on", lambda _: None)(node)
        if known is not None:
            return [str(a) for a in known]
        placed = self.uow.recorder.select_notifications(start=None, limit=1 << 30, topics=[PLACED_TOPIC])
        ids = dict.fromkeys(UUID(str(n.originator_id)) for n in placed)
        return [str(a.id) for a in (self._live(i) for i in ids)
                if a is not None and a.state is QueueState.RUNNING and str(node) in a.nodes]

    def lose(self, lost: list[str], reason: str, by: str, at: datetime) -> list[Any]:
        """Allocations whose node went away: evicted, their resources released, their stages retried or failed
        by policy. Each workflow decides its next attempts once, after all of its losses."""
        touched: list[Any] = []
        workflows: dict[UUID, Workflow] = {}
        for aid in lost:
            alloc = self.uow.load(Allocation, UUID(aid), "allocation")
            if alloc.ended:
                continue
            workflow = workflows.setdefault(alloc.workflow_id, self.uow.load(Workflow, alloc.workflow_id, "workflow"))
            self.learn_start(workflow, alloc, at)
            alloc.evict(reason, by=by, at=at)
            if workflow.stage(alloc.stage).status in (StageStatus.STARTED, StageStatus.RUNNING):
                workflow.stage_lost_node(alloc.stage, alloc.attempt, at=at,
                                         max_eviction_restarts=self.config.max_eviction_restarts(), by=by,
                                         cause=reason)
                if workflow.stage(alloc.stage).kind == "service":
                    touched += self.service_lost(workflow, alloc.stage, reason, at)
            touched += [alloc, *self.release(alloc, by, at)]
        for workflow in workflows.values():
            touched += [workflow, *self.request_ready(workflow, by, at)]
        return touched

    def stop_idle_services(self, workflow: Workflow, at: datetime) -> list[Any]:
        touched: list[Any] = []
        for view in workflow.stage_views():  # a placed replica is started, though no report said so yet
            if view.kind == "service" and view.status is StageStatus.READY:
                placed = self._live(allocation_id(workflow.id, view.name, view.attempt))
                if placed is not None and placed.nodes:
                    self.learn_start(workflow, placed, at)
        for stage in workflow.services_to_stop():
            touched += self._withdraw(workflow, stage, at)
            workflow.stage_stopped(stage, workflow.stage(stage).attempt, at=at, by="scheduler")
        for stage in workflow.services_never_needed():  # a queued one's allocation is withdrawn
            touched += self._withdraw(workflow, stage, at)
            workflow.stage_not_needed(stage, at=at, by="scheduler")
        return touched

    def _withdraw(self, workflow: Workflow, stage: str, at: datetime) -> list[Any]:
        """Cancel the stage's live allocation (running or queued) and give back what it holds."""
        alloc = self._live(allocation_id(workflow.id, stage, workflow.stage(stage).attempt))
        if alloc is None:
            return []
        alloc.cancel("no remaining dependents", by="scheduler", at=at)
        return [alloc, *self.release(alloc, "scheduler", at)]

    def owner_priorities(self, owner: dict[str, str]) -> dict[str, int]:
        """Organization, group and user priorities of a workflow's owner, for its allocations.

        A change racing this read is caught by `propagate_priority`, which moves live allocations."""
        known = self.read_models.owner_priorities(owner)
        if known is not None:
            return known
        found = {}
        for key, kind in (("organization_id", "organization"), ("group_id", "group"), ("user_id", "user")):
            value = owner.get(key)
            aggregate = self.uow.repository.get(UUID(value)) if value and UUID(value) in self.uow.repository else None
            found[f"{kind}_priority"] = int(getattr(aggregate, "priority", 0) or 0)
        return found

    def propagate_priority(self, kind: str, owner: UUID, new: int, by: str, at: datetime,
                           first: Sequence[Any] = ()) -> int:
        """Move every live allocation of the owner to its new priority; `first` is saved with the first chunk."""
        ids = list(self.read_models.live_allocations_of(kind, owner))
        updated, pending = 0, list(first)
        for start in range(0, max(len(ids), 1), SAVE_CHUNK):
            updated += self._update_chunk(kind, ids[start:start + SAVE_CHUNK], new, by, at, pending)
            pending = []
        return updated

    def _update_chunk(self, kind: str, ids: list[UUID], new: int, by: str, at: datetime, with_: list[Any]) -> int:
        for attempt in (1, 2):  # a chunk that raced a placement is reloaded once and written again
            touched = [a for a in (self._live(aid) for aid in ids) if a is not None
                       and a.update_priority(kind, new, by=by, at=at)]
            try:
                self.uow.save(*with_, *touched)
                return len(touched)
            except Conflict:
                if attempt == 2 or with_:
                    raise
                self.uow.repository.forget()  # what this command loaded is stale now
        return 0

    def _live(self, allocation: UUID) -> Allocation | None:
        aid = allocation if isinstance(allocation, UUID) else UUID(str(allocation))
        if aid not in self.uow.repository:
            return None
        found = self.uow.repository.get(aid)
        return found if isinstance(found, Allocation) and not found.ended else None

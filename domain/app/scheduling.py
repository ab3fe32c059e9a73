"""Scheduler-side commands: submission feasibility, blocked causes and owner priority changes on allocations.

The application keeps no index of nodes or of allocations by owner, so the composition root may hand it
two read-model providers (plain attributes, both optional):

- `definitions_provider() -> Sequence[Definition]`: the pools nodes form, for the submission check;
  unset (or no definitions at all), submissions are accepted and wait for nodes.
- `allocations_of_owner(kind, owner_id) -> Iterable[UUID]`: the queued and running allocations of an
  organization, group or user; unset, a priority change records only the tenancy event.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from domain.allocation import Allocation
from domain.app.errors import Conflict, Invalid
from domain.fuzzfile import Problem
from domain.scheduler.feasibility import Infeasible, check_feasible
from domain.scheduler.reasons import Why
from domain.scheduler.snapshot import Definition, QueuedAllocation
from domain.workflow import Workflow

SAVE_CHUNK = 256  # allocations per atomic save: JetStream caps an atomic batch at 1,000 messages


class SchedulingCommands:
    """Mixed into the Roving application through WorkflowCommands."""

    definitions_provider: Callable[[], Sequence[Definition]] | None = None
    allocations_of_owner: Callable[[str, UUID], Iterable[UUID]] | None = None

    def check_feasible_submission(self, workflow: Workflow, definitions: Sequence[Definition] | None) -> None:
        """Refuse stages no node of any definition could hold even when idle; no definitions: accept."""
        if definitions is None and self.definitions_provider is not None:
            definitions = self.definitions_provider()
        if not definitions:
            return
        ignored = self.scheduler_config().ignored_annotations
        problems, seen = [], set()
        for state in workflow.stages.values():
            spec = state.spec
            path = f"{'services' if spec.kind == 'service' else 'jobs'}.{spec.step}.resource"
            if path in seen:
                continue
            refused = check_feasible(_request(workflow, spec), definitions, ignored)
            if refused is not None:
                seen.add(path)
                problems.append(Problem(path=path, message=infeasible_text(refused)))
        if problems:
            raise Invalid(problems)

    def record_blocked(self, allocation: UUID, why: Why, by: str, at: datetime) -> bool:
        """One `SchedulingBlocked` event for a new cause; False when there was nothing new to say."""
        alloc = self.load(Allocation, allocation, "allocation")
        reason, detail = why.cause()
        if not alloc.record_blocked(reason.value, why.message, f"{reason.value}:{detail}", by=by, at=at):
            return False
        self.save(alloc)
        return True

    def propagate_priority(self, kind: str, owner: UUID, new: int, by: str, at: datetime,
                           first: Sequence[Any] = ()) -> int:
        """Move every live allocation of the owner to its new priority; `first` is saved with the first chunk."""
        ids = list(self.allocations_of_owner(kind, owner)) if self.allocations_of_owner is not None else []
        updated, pending = 0, list(first)
        for start in range(0, max(len(ids), 1), SAVE_CHUNK):
            chunk = ids[start:start + SAVE_CHUNK]
            updated += self._update_chunk(kind, chunk, new, by, at, pending)
            pending = []
        return updated

    def _update_chunk(self, kind: str, ids: list[UUID], new: int, by: str, at: datetime, with_: list) -> int:
        for attempt in (1, 2):  # a chunk that raced a placement is reloaded once and written again
            touched = [a for a in (self._live(aid) for aid in ids) if a is not None
                       and a.update_priority(kind, new, by=by, at=at)]
            try:
                self.save(*with_, *touched)
                return len(touched)
            except Conflict:
                if attempt == 2 or with_:
                    raise
                self.repository.forget()  # what this command loaded is stale now
        return 0

    def _live(self, allocation: UUID) -> Allocation | None:
        aid = allocation if isinstance(allocation, UUID) else UUID(str(allocation))
        if aid not in self.repository:
            return None
        found = self.repository.get(aid)
        return found if isinstance(found, Allocation) and not found.ended else None


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
    biggest = f"the largest node ({largest['definition']}) has {_shape(largest)}" if largest else "no nodes"
    why = "; ".join(f"{d}: {r}" for d, r in refused.rejections.items())
    return f"no node can ever hold this job: it asks {asked}; {biggest}; passed over: {why}"


def _shape(values: dict[str, Any]) -> str:
    text = f"cpu {values['cpu']}, memory {_bytes(values['memory'])}"
    devices = values.get("devices") or {}
    return text + ("".join(f", {name} x{count}" for name, count in sorted(devices.items())))


def _bytes(count: int) -> str:
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20)):
        if count >= size:
            return f"{count / size:g} {unit}"
    return f"{count} B"

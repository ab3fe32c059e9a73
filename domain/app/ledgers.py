"""Charging and discharging the ledgers of quotas and shared resources, inside the placement's and the end's commits.

Not commands of their own: `charge` runs inside `place` and `discharge` inside whatever ends an allocation (via
`Allocations.release`), and each returns the ledgers it touched for its caller to save in the same atomic commit.
A charge past a limit refuses the placement (Conflict: the runner counts it as a stale decision and the next pass
decides again), exactly as a node that filled up refuses one.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from domain.allocation import Allocation
from domain.app.config import ConfigHandlers
from domain.app.errors import Conflict
from domain.app.unit_of_work import Recheck, UnitOfWork
from domain.ids import ledger_id, project_id
from domain.ledger import PROJECT, SHARED, Ledger, LedgerFull
from domain.node import Node
from domain.node_admission import to_node_view
from domain.project import Project, ancestors
from domain.scheduler.quotas import charge
from domain.scheduler.snapshot import QueuedAllocation
from domain.workflow import Workflow


def requested(alloc: Allocation) -> QueuedAllocation:
    """The allocation's request in the scheduler's terms, for `charge` (what it counts toward quotas)."""
    r = alloc.resources
    return QueuedAllocation(id=str(alloc.id), workflow_id=str(alloc.workflow_id), stage=alloc.stage,
                            submitted_at=alloc.requested_at, cpu=r.cpu_cores, memory=r.memory_bytes,
                            devices=dict(r.devices), exclusive=r.exclusive, nodes=r.nodes, shared=dict(r.shared))


class Ledgers:
    def __init__(self, uow: UnitOfWork, config: ConfigHandlers) -> None:
        self.uow, self.config = uow, config

    def charge(self, alloc: Allocation, workflow: Workflow, nodes: list[Node], by: str, at: datetime) -> list[Ledger]:
        """Charge its project (and every ancestor) and its shared resources, or Conflict naming the limit."""
        project = str(workflow.owner.get("project") or "")
        shared = dict(alloc.resources.shared)
        if not project and not shared:
            return []
        touched: list[Ledger] = []
        aid = str(alloc.id)
        try:
            if project:
                amounts = charge(requested(alloc), [to_node_view(n) for n in nodes])
                for path in ancestors(project):
                    ledger = self._ledger(PROJECT, path, by, at)
                    ledger.charge(aid, amounts, self._quota(path), by=by, at=at)
                    touched.append(ledger)
            totals = self.config.scheduler_config().shared_resources
            for name, count in sorted(shared.items()):
                ledger = self._ledger(SHARED, name, by, at)
                ledger.charge(aid, {name: count}, {name: totals.get(name, 0)}, by=by, at=at)
                touched.append(ledger)
        except LedgerFull as full:
            raise Conflict(f"cannot place {alloc.stage}: {full}") from full
        return touched

    def refusal(self, alloc: Allocation, workflow: Workflow, nodes: list[Node], by: str, at: datetime) -> str | None:
        """Why `charge` would refuse (the first limit it would pass), changing nothing: a batch of placements checks
        each one whole before any of it is made (SchedulingHandlers.place_all)."""
        project = str(workflow.owner.get("project") or "")
        shared = dict(alloc.resources.shared)
        limits: list[tuple[Ledger, dict[str, int], dict[str, int]]] = []
        if project:
            amounts = charge(requested(alloc), [to_node_view(n) for n in nodes])
            limits += [(self._ledger(PROJECT, path, by, at), amounts, self._quota(path)) for path in ancestors(project)]
        totals = self.config.scheduler_config().shared_resources if shared else {}
        limits += [(self._ledger(SHARED, name, by, at), {name: count}, {name: totals.get(name, 0)})
                   for name, count in sorted(shared.items())]
        for ledger, amounts, limit in limits:
            if str(alloc.id) not in ledger.held and (full := ledger.shortfall(amounts, limit)) is not None:
                return f"cannot place {alloc.stage}: {full}"
        return None

    def discharge(self, alloc: Allocation, by: str, at: datetime) -> list[Ledger]:
        """Give back what the allocation held (nothing if it never was charged)."""
        if not alloc.nodes:
            return []
        names = [(SHARED, name) for name in sorted(alloc.resources.shared)]
        workflow = self.uow.repository.get(alloc.workflow_id) if alloc.workflow_id in self.uow.repository else None
        project = str(getattr(workflow, "owner", {}).get("project") or "")
        names += [(PROJECT, path) for path in ancestors(project)]
        touched, missed = [], []
        for kind, name in names:
            lid = ledger_id(kind, name)
            ledger: Ledger | None = self.uow.repository.get(lid) if lid in self.uow.repository else None
            if ledger is not None and ledger.discharge(str(alloc.id), by=by, at=at):
                touched.append(ledger)
            else:
                missed.append(name)
        # "it held nothing here" must stand on the log: a copy from memory may predate the charge (another API worker
        # placed it, moments before it ended), and giving nothing back would hold the quota for good (seen in the soak)
        if missed and self.uow.repository.doubt():
            raise Recheck(f"{alloc.id}: no charge found in {', '.join(missed)} on copies from memory; deciding again")
        return touched

    def _ledger(self, kind: str, name: str, by: str, at: datetime) -> Ledger:
        lid = ledger_id(kind, name)
        if lid in self.uow.repository:
            found: Ledger = self.uow.repository.get(lid)
            return found
        ledger = Ledger.open(kind, name, by=by, at=at)
        self.uow.repository.hold([ledger])  # the command's later placements charge this one, never a second copy
        return ledger

    def _quota(self, path: str) -> dict[str, int]:
        """The project's limits now; a project deleted while its work ran limits nothing new (its work is held)."""
        pid: UUID = project_id(path)
        found: Any = self.uow.repository.get(pid) if pid in self.uow.repository else None
        if not isinstance(found, Project) or found.deleted:
            return {}
        return dict(found.quota)

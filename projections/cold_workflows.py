"""Cold workflows: one finished workflow the views no longer hold, rebuilt on demand from its own events in the log.

A workflow's events are read by its subject, then its allocations' (their ids follow from the workflow, stage
and attempt: domain.ids.allocation_id), and replayed in time order into a view of that one workflow, so describe,
events, `why` and logs answer for any id as they did while it was hot. The last few rebuilt are kept, so a
client that polls or follows one does not read the log each time (a task array's tasks are each an allocation:
its first cold read costs a read per task).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable
from threading import Lock
from typing import Any
from uuid import UUID

from domain.ids import allocation_id
from projections.workflows import WorkflowsView

KEPT = 64  # cold workflows rebuilt and kept (an ended workflow never changes)
KEPT_STAGES = 20_000  # and at most this many stages among them (a task array's tasks each count)
EventsOf = Callable[[UUID], Iterable[Any]]  # one aggregate's events, from the log by its subject


class ColdWorkflows:
    """`cold(workflow_id)`: the view of one cold workflow, or None when the log has no such workflow."""

    def __init__(self, events_of: EventsOf, node_names: Callable[[], dict[str, str]] | None = None) -> None:
        self.events_of, self.node_names = events_of, node_names
        self._kept: OrderedDict[UUID, WorkflowsView] = OrderedDict()
        self._lock = Lock()

    def __call__(self, workflow_id: UUID) -> WorkflowsView | None:
        with self._lock:
            found = self._kept.get(workflow_id)
            if found is not None:
                self._kept.move_to_end(workflow_id)
                return found
        view = self.rebuild(workflow_id)
        if view is not None and view.status(workflow_id) in ("FINISHED", "FAILED", "CANCELED"):
            with self._lock:  # only an ended one: a workflow read here while still being written moves on
                self._kept[workflow_id] = view
                while len(self._kept) > 1 and (len(self._kept) > KEPT or self._stages() > KEPT_STAGES):
                    self._kept.popitem(last=False)
        return view

    def _stages(self) -> int:
        return sum(len(w.stages) for view in self._kept.values() for w in view.mirror.values())

    def rebuild(self, workflow_id: UUID) -> WorkflowsView | None:
        own = list(self.events_of(workflow_id))
        workflow = WorkflowsView()
        workflow.apply(enumerate(own, start=1))
        found = workflow.workflow(workflow_id)
        if found is None:
            return None
        attempts = [allocation_id(workflow_id, s.name, n)
                    for s in found.stage_views() for n in range(1, max(s.attempt, 1) + 1)]
        theirs = [e for a in attempts for e in self.events_of(a)]
        # in time order, a workflow's event before its allocations' of the same moment (it is recorded first)
        ordered = sorted(own + theirs, key=lambda e: (_when(e), type(e).__qualname__.split(".")[0] != "Workflow"))
        view = WorkflowsView()
        if self.node_names is not None:
            view.node_names.update(self.node_names())  # the hot views know the nodes' names
        view.apply(enumerate(ordered, start=1))
        return view


def _when(event: Any) -> Any:
    return getattr(event, "at", None) or event.timestamp

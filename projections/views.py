"""All read models in one object: `Views.apply(batch)` feeds each projection; queries read them.

The tailer applies batches on its own thread while the API reads: every projection shares one lock, so
a query sees a batch either wholly applied or not at all.
"""

from __future__ import annotations

import threading
from datetime import datetime
from typing import Any

import msgspec

from domain.agent_protocol import Assignments
from domain.agent_start import Start
from domain.scheduler.snapshot import Snapshot
from projections.assignments import RunSpecs, assignments
from projections.base import Batch, Projection
from projections.catalog import CatalogSourcesView
from projections.cold_workflows import ColdWorkflows, EventsOf
from projections.endpoints import EndpointsView
from projections.hot_set import DEFAULT_HOT_WORKFLOWS, trim
from projections.node_events import NodeEventsView
from projections.nodes import NodesView
from projections.projects import ProjectsView
from projections.provisioners import ProvisionersView
from projections.queue import QueueView
from projections.snapshot import SnapshotValues, scheduler_snapshot
from projections.tenancy import TenancyView
from projections.workflows import WorkflowsView


class Views:
    """The workflows, queue, nodes and tenancy views, and the rest, all fed from the log and nothing else (the
    scheduler runner's reasons, priorities and figures are its own: api.scheduler.state)."""

    def __init__(self, hot_workflows: int = DEFAULT_HOT_WORKFLOWS) -> None:
        self.hot_workflows = hot_workflows  # finished workflows kept in memory (projections.hot_set)
        self.lock = threading.RLock()
        self.workflows = WorkflowsView(self.lock)
        self.queue = QueueView(self.lock)
        self.nodes = NodesView(self.lock, self.queue)
        self.tenancy = TenancyView(self.lock)
        self.endpoints = EndpointsView(self.lock)
        self.node_events = NodeEventsView(self.lock)
        self.catalog_sources = CatalogSourcesView(self.lock)
        self.provisioners = ProvisionersView(self.lock)
        self.projects = ProjectsView(self.lock)
        self.projections: tuple[Projection, ...] = (self.workflows, self.queue, self.nodes, self.tenancy,
                                                      self.endpoints, self.node_events, self.catalog_sources,
                                                      self.provisioners, self.projects)
        self.applied = threading.Condition(self.lock)
        self.snapshot_values = SnapshotValues()  # the scheduler's values of the last pass, kept for the next
        self.run_specs = RunSpecs()  # the run specs of the agents' last answers

    @property
    def position(self) -> int:
        """The last log position every view has applied."""
        return min(p.position for p in self.projections)

    def apply(self, batch: Batch) -> int:
        """Feed one batch to every view (each skips what it already has); returns how many were new."""
        batch = list(batch)
        with self.lock:
            fresh = max(p.apply(batch) for p in self.projections)
            trim(self.workflows, self.queue, self.hot_workflows)
            self.applied.notify_all()
        return fresh

    def read_cold_from(self, events_of: EventsOf) -> None:
        """Answer for workflows that left the hot set by reading their events from the log (`events_of(id)`)."""
        self.workflows.cold = ColdWorkflows(events_of, self.workflows.node_names.copy)

    def saved_state(self) -> dict[str, dict[str, Any]]:
        """Every view's log-built state, taken at one position."""
        with self.lock:
            return {type(p).__name__: p.saved_state() for p in self.projections}

    def restore_state(self, state: dict[str, dict[str, Any]]) -> None:
        """Take every view's state from `saved_state`; a view missing from it is an error, not an empty view."""
        with self.lock:
            missing = [type(p).__name__ for p in self.projections if type(p).__name__ not in state]
            if missing:
                raise ValueError(f"the snapshot has no state for {', '.join(missing)}")
            for p in self.projections:
                p.restore_state(state[type(p).__name__])
            self.applied.notify_all()

    def wait_for(self, position: int, timeout: float | None = None) -> bool:
        """Block until the views reached `position` (to read one's own write); False on timeout."""
        with self.lock:
            return self.applied.wait_for(lambda: self.position >= position, timeout)

    def assignments(self, node_id: Any) -> Assignments[Start]:
        with self.lock:
            return assignments(node_id, self.queue, self.workflows, self.nodes, self.tenancy, self.run_specs)

    def answer(self, node_id: Any) -> Assignments[Start]:
        """The node's assignments as its agent is answered them: with the log position they were built at (one
        lock: no batch lands between the reading and the position)."""
        with self.lock:
            built = assignments(node_id, self.queue, self.workflows, self.nodes, self.tenancy, self.run_specs)
            return msgspec.structs.replace(built, position=self.position)

    def scheduler_snapshot(self, now: datetime) -> Snapshot:
        with self.lock:
            snapshot = scheduler_snapshot(now, self.queue, self.workflows, self.nodes, self.tenancy, self.projects,
                                          self.snapshot_values)
            templates = self.provisioners.templates()
            return msgspec.structs.replace(snapshot, templates=templates) if templates else snapshot

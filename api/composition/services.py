"""What the HTTP app is given: the composition root's parts, typed, so routes ask for them by name.

`api.composition.stack.Stack` builds the real set; tests build smaller ones (in-memory log, fakes for leases and logs).
Optional parts are None where a process does not run them (a control plane without the audit feed, the
scheduler's runner, the long-poll waiters or the secret store); routes check for None, never probe attributes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from api.scheduler.state import SchedulerState

if TYPE_CHECKING:
    from adapters.audit_log import AuditLog
    from adapters.log_probe import LogProbe
    from adapters.object_store import ObjectStore
    from adapters.traffic import EndpointTraffic
    from api.composition.settings import Settings
    from api.composition.wakeups import AssignmentWaiters
    from api.http.positions import PositionWaiters
    from api.scheduler.runner import SchedulerRunner
    from domain.app import Roving
    from domain.app.catalog import CatalogHandlers
    from domain.app.secrets import SecretHandlers
    from projections.views import Views


class Follower(Protocol):
    """What applies the log to the views; read-your-writes waits on it."""

    def wait_for(self, position: int, timeout: float | None = ...) -> Any: ...


class LogReader(Protocol):
    """A stage's output, as its agent appended it to the log's output stream (`follow`: live, by stream)."""

    def read(self, workflow_id: str, stage: str) -> bytes: ...

    def read_range(self, workflow_id: str, stage: str, offset: int, limit: int | None) -> tuple[bytes, int]: ...

    def follow(self, workflow_id: str, stage: str) -> AsyncIterator[tuple[str, bytes]]: ...


class NodeLeases(Protocol):
    def touch(self, node: str) -> Any: ...


@dataclass
class Services:
    roving: Roving
    views: Views
    key: Any                              # the token key ring (adapters.auth.tokens)
    tailer: Follower | None = None
    logs: LogReader | None = None
    leases: NodeLeases | None = None
    settings: Settings | None = None
    nats_url: str = ""                    # the control plane's own log URL (its credentials): never handed out
    agent_nats_url: str = ""              # the log URL agents get for job output: the agent role's credentials
    cluster: str = ""
    runner: SchedulerRunner | None = None
    audit: AuditLog | None = None
    waiters: AssignmentWaiters | None = None
    secrets: SecretHandlers | None = None
    traffic: EndpointTraffic | None = None  # requests through the endpoint proxy, which the autoscaler reads
    positions: PositionWaiters | None = None  # read-your-writes by log position (api.http.positions)
    audit_owner: Callable[[], str | None] | None = None  # where the audit runs, when another worker holds it
    catalog: CatalogHandlers | None = None  # catalog sources and templates (adapters.catalog_store.open_catalog)
    prometheus_url: str = ""  # `roving up --monitoring`'s Prometheus: the dashboard's charts ask it for history
    log_probe: LogProbe | None = None  # whether the log takes writes now (adapters/log_probe.py): /readyz
    objects: ObjectStore | None = None  # people's objects (adapters.object_store), streamed through the API
    # the last pass of this process's scheduler runner (empty where it never led): `why`, ranked priorities, figures
    scheduling: SchedulerState = field(default_factory=SchedulerState)

    def __post_init__(self) -> None:
        # a workflow that left the views' hot set is read from the log by its subject (projections.cold_workflows)
        if self.views.workflows.cold is None:  # or, once the retention purged it, from the archive
            from api.composition.retention import logged_or_archived
            self.views.read_cold_from(logged_or_archived(self.roving, self.settings.data_dir)
                                      if self.settings is not None else self.roving.events.get)
        if self.views.workflows.cold_rows is None and self.settings is not None:  # their list rows (adapters.cold_index)
            from adapters.cold_index import ColdIndex
            self.views.workflows.cold_rows = ColdIndex(self.settings.data_dir / "views" / "cold-workflows.sqlite")

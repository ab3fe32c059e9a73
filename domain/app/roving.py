"""The Roving application: loads aggregates, lets them decide, saves every change of a command atomically."""

from __future__ import annotations

import threading
from typing import Any, TypeVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.persistence import IntegrityError, RecordConflictError

from domain.app.config import ConfigCommands
from domain.app.endpoints import EndpointCommands
from domain.app.errors import NotFound, WriteRace
from domain.app.nodes import NodeCommands
from domain.app.tenancy import PasswordHasher, TenancyCommands
from domain.app.unit_of_work import ScopedRepository, command
from domain.app.workflows import WorkflowCommands

A = TypeVar("A")


class Roving(EndpointCommands, WorkflowCommands, NodeCommands, TenancyCommands, ConfigCommands, Application[UUID]):
    """Storage comes from configuration (PERSISTENCE_MODULE); password hashing is injected."""

    def __init__(self, env: dict[str, str] | None = None, passwords: PasswordHasher | None = None) -> None:
        # Aggregates are cached and caught up with only their new events (the library's fast-forward): a node or a
        # task array that has seen thousands of events is not replayed from its first on every command.
        super().__init__(env={"AGGREGATE_CACHE_MAXSIZE": "5000", **(env or {})})
        self.cluster = self.env.get("ROVING_CLUSTER") or "local"
        self.passwords = passwords  # type: ignore[assignment]
        self.last_position = 0
        self._position_lock = threading.Lock()

    def construct_repository(self) -> ScopedRepository:  # type: ignore[override]
        """The library's repository, seen through the running command's identity map (one load per command)."""
        return ScopedRepository(super().construct_repository())

    def load(self, kind: type[A], aggregate_id: UUID, what: str) -> A:
        try:
            found = self.repository.get(aggregate_id)
        except AggregateNotFoundError as error:
            raise NotFound(what) from error
        if not isinstance(found, kind):
            raise NotFound(what)
        return found

    def save(self, *objs: Any, **kwargs: Any):
        """Every change of one command in one atomic commit; a stale writer gets WriteRace (the command decides
        again, see unit_of_work), never a 500. An aggregate named twice is saved once."""
        unique = list({id(obj): obj for obj in objs if obj is not None}.values())
        try:
            recordings = super().save(*unique, **kwargs)
        except (IntegrityError, RecordConflictError) as error:
            raise WriteRace(f"someone changed this at the same time ({error})") from error
        if recordings:
            with self._position_lock:
                self.last_position = max(self.last_position, recordings[-1].notification.id)
        return recordings


# Every command runs in a unit of work and decides again after a lost write race (see unit_of_work).
COMMANDS = (
    "submit_workflow", "stop_workflow", "place", "report", "preempt", "record_blocked",
    "register_node", "node_lost", "add_hold", "uncordon", "release_hold", "evict", "deprovision", "remove_node",
    "apply_alerts", "create_endpoint", "delete_endpoint", "change_config",
    "create_organization", "create_user", "login", "set_priority", "create_group", "set_preempt_list",
    "add_member", "remove_member", "set_explainer",
)
for _name in COMMANDS:
    setattr(Roving, _name, command(getattr(Roving, _name)))

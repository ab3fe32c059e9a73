"""The Roving application: loads aggregates, lets them decide, saves every change of a command atomically."""

from __future__ import annotations

import threading
from typing import Any, TypeVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.persistence import IntegrityError, RecordConflictError

from domain.app.config import ConfigCommands
from domain.app.endpoints import EndpointCommands
from domain.app.errors import Conflict, NotFound
from domain.app.nodes import NodeCommands
from domain.app.tenancy import PasswordHasher, TenancyCommands
from domain.app.workflows import WorkflowCommands

A = TypeVar("A")


class Roving(EndpointCommands, WorkflowCommands, NodeCommands, TenancyCommands, ConfigCommands, Application[UUID]):
    """Storage comes from configuration (PERSISTENCE_MODULE); password hashing is injected."""

    def __init__(self, env: dict[str, str] | None = None, passwords: PasswordHasher | None = None) -> None:
        super().__init__(env=env)
        self.cluster = self.env.get("ROVING_CLUSTER") or "local"
        self.passwords = passwords  # type: ignore[assignment]
        self.last_position = 0
        self._position_lock = threading.Lock()

    def load(self, kind: type[A], aggregate_id: UUID, what: str) -> A:
        try:
            found = self.repository.get(aggregate_id)
        except AggregateNotFoundError as error:
            raise NotFound(what) from error
        if not isinstance(found, kind):
            raise NotFound(what)
        return found

    def save(self, *objs: Any, **kwargs: Any):
        """Every change of one command in one atomic commit; a stale writer gets Conflict, not a 500."""
        try:
            recordings = super().save(*objs, **kwargs)
        except (IntegrityError, RecordConflictError) as error:
            raise Conflict(f"someone changed this at the same time; try again ({error})") from error
        if recordings:
            with self._position_lock:
                self.last_position = max(self.last_position, recordings[-1].notification.id)
        return recordings

"""The endpoints view: each Endpoint aggregate mirrored from its events, found by id or by name for the proxy."""

from __future__ import annotations

import threading
from collections.abc import Callable
from uuid import UUID

from domain.app.ids import endpoint_id
from domain.endpoint import Endpoint
from projections.base import Mirror, Projection, as_uuid, on


class EndpointsView(Projection):
    def __init__(self, lock: threading.RLock | None = None) -> None:
        super().__init__(lock)
        self.mirror: Mirror[Endpoint] = Mirror()

    @on(Endpoint.Event)
    def _endpoint(self, event: Endpoint.Event) -> None:
        self.mirror.apply(event)

    def find(self, key: str | UUID) -> Endpoint | None:
        """By id or by name; a deleted endpoint is still found (callers say it was deleted)."""
        with self.lock:
            found = self.mirror.get(as_uuid(key) or endpoint_id(str(key)))
            return found if isinstance(found, Endpoint) else None

    def list(self, visible: Callable[[Endpoint], bool]) -> list[Endpoint]:
        with self.lock:
            return sorted((e for e in self.mirror.values() if not e.deleted and visible(e)), key=lambda e: e.name)

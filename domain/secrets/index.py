"""The SecretIndex aggregate: the cluster's one list of secret shelves, so a key rotation can reseal them all.

A shelf joins it once, in the same commit that opens the shelf; the index never holds a name or a value.
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID, uuid5

from eventsourcing.domain import event

from domain.secrets.shelf import SECRETS_ROOT
from domain.timed import TimedAggregate

INDEX_ID = uuid5(SECRETS_ROOT, "index")


class SecretIndex(TimedAggregate):
    @event("Started")
    def __init__(self, id: UUID, by: str, at: datetime) -> None:
        self.shelves: list[UUID] = []

    @classmethod
    def start(cls, *, by: str, at: datetime) -> SecretIndex:
        return cls(id=INDEX_ID, by=by, at=at)

    def add(self, shelf: UUID, *, by: str, at: datetime) -> None:
        if shelf not in self.shelves:
            self._added(shelf_id=shelf, by=by, at=at)

    @event("ShelfAdded")
    def _added(self, shelf_id: UUID, by: str, at: datetime) -> None:
        self.shelves.append(shelf_id)

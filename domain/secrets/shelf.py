"""The SecretShelf aggregate: one owner's secrets (a user, a group, an organization or the cluster), by name.

Its events carry names, who and when, the key id and the ciphertext (field `secret_ciphertext`, which the
audit view redacts by name), never a value. One shelf per owner lets the application list what a caller may
read by loading a handful of shelves, with no read model to keep in step.
"""

from __future__ import annotations

from datetime import datetime
from uuid import NAMESPACE_URL, UUID, uuid5

import msgspec
from eventsourcing.domain import event

from domain.secrets.rules import Scope, Sealed, SecretError, check_name
from domain.timed import TimedAggregate

SECRETS_ROOT = uuid5(NAMESPACE_URL, "roving:secrets")


def shelf_id(scope: Scope, owner_id: str) -> UUID:
    return uuid5(SECRETS_ROOT, f"{scope.value}:{owner_id}")


def entry_id(shelf: UUID, name: str) -> UUID:
    return uuid5(shelf, f"secret:{name}")


class Entry(msgspec.Struct, frozen=True, kw_only=True):
    id: UUID
    name: str
    sealed: Sealed
    created_by: str
    created_at: datetime


class SecretShelf(TimedAggregate):
    @event("Opened")
    def __init__(self, id: UUID, scope: Scope, owner_id: str, label: str, organization_id: str, by: str,
                 at: datetime) -> None:
        self.scope, self.owner_id, self.label, self.organization_id = scope, owner_id, label, organization_id
        self.entries: dict[str, Entry] = {}

    @classmethod
    def open(cls, scope: Scope, owner_id: str, *, label: str, organization_id: str, by: str, at: datetime) -> SecretShelf:
        return cls(id=shelf_id(scope, owner_id), scope=scope, owner_id=owner_id, label=label,
                   organization_id=organization_id, by=by, at=at)

    def store(self, name: str, sealed: Sealed, *, by: str, at: datetime) -> UUID:
        check_name(name)
        if name in self.entries:
            raise SecretError("name", f"a {self.scope.value} secret named {name!r} already exists; delete it first")
        eid = entry_id(self.id, name)
        self._stored(entry_id=eid, name=name, key_id=sealed.key_id, secret_ciphertext=sealed.ciphertext,
                     organization_id=self.organization_id, by=by, at=at)
        return eid

    def remove(self, entry: UUID, *, by: str, at: datetime) -> None:
        found = self.by_id(entry)
        if found is None:
            raise SecretError("id", f"secret {entry} is not on this shelf")
        self._removed(entry_id=entry, name=found.name, organization_id=self.organization_id, by=by, at=at)

    def reseal(self, name: str, sealed: Sealed, *, by: str, at: datetime) -> None:
        """The same value under another key (key rotation); the ciphertext changes, the secret does not."""
        found = self.entries[name]
        self._resealed(entry_id=found.id, key_id=sealed.key_id, secret_ciphertext=sealed.ciphertext,
                       organization_id=self.organization_id, by=by, at=at)

    def by_id(self, entry: UUID) -> Entry | None:
        return next((e for e in self.entries.values() if e.id == entry), None)

    @event("SecretStored")
    def _stored(self, entry_id: UUID, name: str, key_id: str, secret_ciphertext: str, organization_id: str, by: str,
                at: datetime) -> None:
        self.entries[name] = Entry(id=entry_id, name=name, sealed=Sealed(key_id, secret_ciphertext), created_by=by,
                                   created_at=at)

    @event("SecretRemoved")
    def _removed(self, entry_id: UUID, name: str, organization_id: str, by: str, at: datetime) -> None:
        del self.entries[name]

    @event("SecretResealed")
    def _resealed(self, entry_id: UUID, key_id: str, secret_ciphertext: str, organization_id: str, by: str,
                  at: datetime) -> None:
        found = next(e for e in self.entries.values() if e.id == entry_id)
        self.entries[found.name] = msgspec.structs.replace(found, sealed=Sealed(key_id, secret_ciphertext))

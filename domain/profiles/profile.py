"""The Profile aggregate (one per name) and the ProfileCatalog that lists the names, both revisioned.

A profile is set whole (PUT), and deleted; a name deleted and set again continues its revisions, so a revision
never names two different bodies.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

import msgspec
from eventsourcing.domain import Aggregate, event

from domain.profiles.body import ProfileBody

ROOT = uuid5(NAMESPACE_URL, "roving")


class Profile(Aggregate):
    @staticmethod
    def create_id(name: str, **_: Any) -> UUID:
        return profile_id(name)

    @event("Created")
    def __init__(self, name: str, by: str, at: datetime) -> None:
        self.name = name
        self.body: dict[str, Any] = {}
        self.revision = 0
        self.deleted = True  # nothing is set until the first `set`
        self.changed_by, self.changed_at = by, at

    @property
    def values(self) -> ProfileBody:
        return msgspec.convert(self.body, ProfileBody)

    def set(self, body: ProfileBody, by: str, at: datetime) -> bool:
        """Record the body as the profile's next revision; False (nothing recorded) when it says the same."""
        values = msgspec.to_builtins(body)
        if not self.deleted and values == self.body:
            return False
        self._set(body=values, revision=self.revision + 1, digest=body.digest(), by=by, at=at)
        return True

    def delete(self, by: str, at: datetime) -> None:
        self._deleted(revision=self.revision + 1, by=by, at=at)

    @event("Set")
    def _set(self, body: dict[str, Any], revision: int, digest: str, by: str, at: datetime) -> None:
        self.body, self.revision, self.digest, self.deleted = body, revision, digest, False
        self.changed_by, self.changed_at = by, at

    @event("Deleted")
    def _deleted(self, revision: int, by: str, at: datetime) -> None:
        self.revision, self.deleted, self.digest = revision, True, ""
        self.changed_by, self.changed_at = by, at

    digest: str = ""


class ProfileCatalog(Aggregate):
    """The names of the profiles that exist, so listing them needs no read model."""

    @staticmethod
    def create_id(**_: Any) -> UUID:
        return catalog_id()

    @event("Created")
    def __init__(self, by: str, at: datetime) -> None:
        self.names: dict[str, int] = {}

    def note(self, name: str, revision: int) -> None:
        if self.names.get(name) != revision:
            self._noted(name=name, revision=revision)

    def forget(self, name: str) -> None:
        if name in self.names:
            self._forgotten(name=name)

    @event("Noted")
    def _noted(self, name: str, revision: int) -> None:
        self.names[name] = revision

    @event("Forgotten")
    def _forgotten(self, name: str) -> None:
        self.names.pop(name, None)


def profile_id(name: str) -> UUID:
    return uuid5(ROOT, f"profile:{name}")


def catalog_id() -> UUID:
    return uuid5(ROOT, "profile-catalog")

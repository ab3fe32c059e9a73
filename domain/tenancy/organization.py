"""The Organization aggregate: a tenant's name, its priority (set by cluster admins only) and its owners."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from eventsourcing.domain import event

from domain.tenancy.common import (
    PriorityMessage,
    Role,
    TenancyError,
    TenantAggregate,
    require_aware,
    require_name,
    require_priority,
    require_role,
)


class Organization(TenantAggregate):
    class PriorityUpdated(PriorityMessage, TenantAggregate.Event):
        kind = "organization"
        old: int
        new: int
        by: str
        by_role: Role
        at: datetime

    class Created(TenantAggregate.Created):
        name: str
        owners: list[UUID]
        by: str
        at: datetime

    @event(Created)
    def __init__(self, id: UUID, name: str, owners: list[UUID], by: str, at: datetime) -> None:
        self.name = name
        self.owners = list(owners)
        self.priority = 0
        self.created_by, self.created_at = by, at

    @classmethod
    def create(cls, id: UUID, name: str, owners: list[UUID], *, by: str, at: datetime) -> Organization:
        """A new organization at priority 0; it must start with at least one owner."""
        name = require_name("name", name)
        if not owners:
            raise TenancyError("owners", "an organization needs at least one owner")
        return cls(id=id, name=name, owners=_unique(owners), by=by, at=require_aware(at))

    def set_priority(self, priority: int, *, by: str, by_role: Role, at: datetime) -> bool:
        """Only a cluster admin may change an organization's priority; returns False when nothing changed."""
        require_role(by_role, {Role.CLUSTER_ADMIN}, "set an organization's priority")
        priority = require_priority(priority)
        if priority == self.priority:
            return False
        self._priority_updated(old=self.priority, new=priority, by=by, by_role=by_role, at=require_aware(at))
        return True

    @event(PriorityUpdated)
    def _priority_updated(self, old: int, new: int, by: str, by_role: Role, at: datetime) -> None:
        self.priority = new

    def rename(self, name: str, *, by: str, at: datetime) -> None:
        name = require_name("name", name)
        if name != self.name:
            self._renamed(name=name, by=by, at=require_aware(at))

    @event("Renamed")
    def _renamed(self, name: str, by: str, at: datetime) -> None:
        self.name = name

    def add_owner(self, user_id: UUID, *, by: str, at: datetime) -> None:
        if user_id not in self.owners:
            self._owner_added(user_id=user_id, by=by, at=require_aware(at))

    @event("OwnerAdded")
    def _owner_added(self, user_id: UUID, by: str, at: datetime) -> None:
        self.owners.append(user_id)

    def remove_owner(self, user_id: UUID, *, by: str, at: datetime) -> None:
        """An organization keeps at least one owner, so nobody is left able to manage it."""
        if user_id not in self.owners:
            raise TenancyError("owners", f"user {user_id} is not an owner of organization {self.name}")
        if self.owners == [user_id]:
            raise TenancyError("owners", f"cannot remove the last owner of organization {self.name}")
        self._owner_removed(user_id=user_id, by=by, at=require_aware(at))

    @event("OwnerRemoved")
    def _owner_removed(self, user_id: UUID, by: str, at: datetime) -> None:
        self.owners.remove(user_id)

    def is_owner(self, user_id: UUID) -> bool:
        return user_id in self.owners


def _unique(ids: list[UUID]) -> list[UUID]:
    return list(dict.fromkeys(ids))

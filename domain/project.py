"""The Project aggregate: one node of the ownership tree, named by path, with its quota, members and grants.

Projects nest by path (`physics/lattice` lives under `physics`); a parent must exist before its children. Work
submitted into a project counts toward its quota and toward every ancestor's (roll-up), so `physics`' quota
caps everything under `physics/`. Membership is the project's own (no inheritance: a member of `physics` is not
a member of `physics/lattice`), and a user may belong to several projects. Grants give a user a permission
over the project's whole subtree: `project:view`, or a job permission over the work submitted into it.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any
from uuid import UUID

from eventsourcing.domain import event

from domain.ids import project_id
from domain.project_paths import (
    MAX_QUOTA,
    PERMISSIONS,
    ProjectError,
    ancestors,
    check_path,
    parent_of,
    parse_quota,
    quota_view,
    within,
)
from domain.timed import TimedAggregate

__all__ = ["MAX_QUOTA", "PERMISSIONS", "Project", "ProjectError", "ancestors", "check_path", "parent_of",
           "parse_quota", "quota_view", "within"]
MAX_MEMBERS = 10_000


class Project(TimedAggregate):
    @staticmethod
    def create_id(path: str, **_: Any) -> UUID:
        return project_id(path)

    class Created(TimedAggregate.Created):
        path: str
        by: str
        at: datetime

    @event(Created)
    def __init__(self, path: str, by: str, at: datetime) -> None:
        self.path = path
        self.quota: dict[str, int] = {}
        self.members: list[str] = []
        self.grants: dict[str, list[str]] = {}
        self.deleted = False

    @classmethod
    def create(cls, path: str, *, by: str, at: datetime) -> Project:
        return cls(path=check_path(path), by=by, at=at)

    @property
    def parent(self) -> str:
        return parent_of(self.path)

    def is_member(self, username: str) -> bool:
        wanted = username.lower()
        return any(m.lower() == wanted for m in self.members)

    def set_quota(self, limits: dict[str, int], *, by: str, at: datetime) -> bool:
        """Replace the quota (limits by key, as `parse_quota` gives); False when unchanged."""
        self._alive()
        if limits == self.quota:
            return False
        self._quota_set(limits=dict(limits), by=by, at=at)
        return True

    @event("QuotaSet")
    def _quota_set(self, limits: dict[str, int], by: str, at: datetime) -> None:
        self.quota = dict(limits)

    def change_members(self, add: Iterable[str] = (), remove: Iterable[str] = (), *, by: str, at: datetime) -> bool:
        """Add and remove members by username; removing one who is not a member is refused, naming them."""
        self._alive()
        added = [u for u in dict.fromkeys(add) if not self.is_member(u)]
        removed = list(dict.fromkeys(remove))
        for username in removed:
            if not self.is_member(username) and username not in added:
                raise ProjectError("members", f"{username} is not a member of project {self.path}")
        if len(self.members) + len(added) - len(removed) > MAX_MEMBERS:
            raise ProjectError("members", f"a project has at most {MAX_MEMBERS:,} members")
        if not added and not removed:
            return False
        self._members_changed(added=added, removed=removed, by=by, at=at)
        return True

    @event("MembersChanged")
    def _members_changed(self, added: list[str], removed: list[str], by: str, at: datetime) -> None:
        gone = {u.lower() for u in removed}
        self.members = [m for m in self.members if m.lower() not in gone] + [u for u in added if u.lower() not in gone]

    def set_members(self, usernames: Iterable[str], *, by: str, at: datetime) -> bool:
        """Make the member list exactly `usernames` (PUT's replace)."""
        wanted = list(dict.fromkeys(usernames))
        keep = {u.lower() for u in wanted}
        return self.change_members(add=wanted, remove=[m for m in self.members if m.lower() not in keep], by=by, at=at)

    def grant(self, username: str, permissions: Iterable[str], *, by: str, at: datetime) -> bool:
        self._alive()
        wanted = _permissions(permissions)
        new = [p for p in wanted if p not in self.grants.get(username, [])]
        if not new:
            return False
        self._granted(username=username, permissions=new, by=by, at=at)
        return True

    class Granted(TimedAggregate.Event):
        username: str
        permissions: list[str]
        by: str
        at: datetime

    @event(Granted)
    def _granted(self, username: str, permissions: list[str], by: str, at: datetime) -> None:
        self.grants[username] = self.grants.get(username, []) + list(permissions)

    def revoke(self, username: str, permissions: Iterable[str], *, by: str, at: datetime) -> bool:
        self._alive()
        held = self.grants.get(username, [])
        gone = [p for p in _permissions(permissions) if p in held]
        if not gone:
            return False
        self._revoked(username=username, permissions=gone, by=by, at=at)
        return True

    class Revoked(TimedAggregate.Event):
        username: str
        permissions: list[str]
        by: str
        at: datetime

    @event(Revoked)
    def _revoked(self, username: str, permissions: list[str], by: str, at: datetime) -> None:
        left = [p for p in self.grants.get(username, []) if p not in permissions]
        if left:
            self.grants[username] = left
        else:
            self.grants.pop(username, None)

    def delete(self, *, by: str, at: datetime) -> None:
        self._alive()
        self._deleted(by=by, at=at)

    class Deleted(TimedAggregate.Event):
        by: str
        at: datetime

    @event(Deleted)
    def _deleted(self, by: str, at: datetime) -> None:
        self.deleted = True

    def restore(self, *, by: str, at: datetime) -> None:
        """A deleted path made again: it starts empty, as a new project would."""
        if self.deleted:
            self._restored(by=by, at=at)

    class Restored(TimedAggregate.Event):
        by: str
        at: datetime

    @event(Restored)
    def _restored(self, by: str, at: datetime) -> None:
        self.deleted = False
        self.quota, self.members, self.grants = {}, [], {}

    def _alive(self) -> None:
        if self.deleted:
            raise ProjectError("path", f"project {self.path} was deleted")


def _permissions(permissions: Iterable[str]) -> list[str]:
    wanted = list(dict.fromkeys(permissions))
    for permission in wanted:
        if permission not in PERMISSIONS:
            raise ProjectError("permissions", f"unknown permission {permission!r}; one of {', '.join(PERMISSIONS)}")
    if not wanted:
        raise ProjectError("permissions", f"name at least one of {', '.join(PERMISSIONS)}")
    return wanted

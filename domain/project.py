"""The Project aggregate: one node of the ownership tree, named by path, with its quota, members and grants.

Projects nest by path (`physics/lattice` lives under `physics`); a parent must exist before its children. Work
submitted into a project counts toward its quota and toward every ancestor's (roll-up), so `physics`' quota
caps everything under `physics/`. Membership is the project's own (no inheritance: a member of `physics` is not
a member of `physics/lattice`), and a user may belong to several projects. Grants give a user a permission
over the project's whole subtree: `project:view`, or a job permission over the work submitted into it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any
from uuid import UUID

from eventsourcing.domain import event

from domain.ids import project_id
from domain.quantities import QuantityError, parse_memory
from domain.timed import TimedAggregate

SEGMENT = r"[a-z0-9][a-z0-9_.-]{0,62}"
PATH = re.compile(rf"^{SEGMENT}(/{SEGMENT}){{0,7}}$")
MAX_QUOTA = 2**53  # a quota figure stays exact in JSON numbers and in sums of charges
PERMISSIONS = ("project:view", "workflow:view", "workflow:stop", "allocation:explain")
MAX_MEMBERS = 10_000


class ProjectError(ValueError):
    """A project command refused; `field` names what was wrong and `reason` says why."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field, self.reason = field, reason


def check_path(path: str) -> str:
    """A project path: 1 to 8 lowercase segments of letters, digits, `_ . -`, joined by `/`."""
    if not isinstance(path, str) or not PATH.match(path.strip("/")) or ".." in path:
        raise ProjectError("path", f"{path!r} is not a project path: 1 to 8 segments of lowercase letters, digits, "
                                   "_ . - (each starting with a letter or digit), joined by /, e.g. physics/lattice")
    return path.strip("/")


def ancestors(path: str) -> list[str]:
    """The project and every ancestor, root first: `a/b/c` -> `a`, `a/b`, `a/b/c`."""
    parts = path.split("/")
    return ["/".join(parts[: i + 1]) for i in range(len(parts))] if path else []


def parent_of(path: str) -> str:
    return path.rpartition("/")[0]


def within(path: str, scope: str) -> bool:
    """Is `path` the project `scope` or one of its descendants (a grant on `scope` covers it)?"""
    return path == scope or path.startswith(scope + "/")


def parse_quota(quota: Mapping[str, Any]) -> dict[str, int]:
    """`{cpu: 8, memory: "64GiB", devices: {gpu: 2}}` as limits by key (`cpu`, `memory`, `devices.gpu`);
    a key given as null has no limit. Memory is in bytes (a number) or a size with a unit."""
    if not isinstance(quota, Mapping):
        raise ProjectError("quota", f"expected {{cpu: N, memory: SIZE, devices: {{NAME: N}}}}, got {quota!r}")
    limits: dict[str, int] = {}
    for key, value in quota.items():
        if key == "devices":
            limits.update(_devices(value))
        elif key == "cpu":
            if value is not None:
                limits["cpu"] = _count("quota.cpu", value)
        elif key == "memory":
            if value is not None:
                limits["memory"] = _memory(value)
        else:
            raise ProjectError(f"quota.{key}", "unknown quota key; a quota limits cpu, memory and devices")
    return limits


def _devices(value: Any) -> dict[str, int]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ProjectError("quota.devices", f"expected {{NAME: COUNT}}, got {value!r}")
    found = {}
    for name, count in value.items():
        if not isinstance(name, str) or not name or len(name) > 128:
            raise ProjectError("quota.devices", f"{name!r} is not a device name")
        if count is not None:
            found[f"devices.{name}"] = _count(f"quota.devices.{name}", count)
    return found


def _count(field: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_QUOTA:
        raise ProjectError(field, f"expected a whole number from 0 to {MAX_QUOTA:,} (or null for no limit), got {value!r}")
    return value


def _memory(value: Any) -> int:
    try:
        size = parse_memory(value)
    except QuantityError as error:
        raise ProjectError("quota.memory", str(error)) from None
    return _count("quota.memory", size)


def quota_view(limits: Mapping[str, int]) -> dict[str, Any]:
    """Limits by key as the API shows a quota: `{cpu, memory, devices: {NAME: N}}` (absent: no limit)."""
    shown: dict[str, Any] = {k: v for k, v in limits.items() if not k.startswith("devices.")}
    devices = {k.removeprefix("devices."): v for k, v in limits.items() if k.startswith("devices.")}
    if devices:
        shown["devices"] = devices
    return shown


class Project(TimedAggregate):
    @staticmethod
    def create_id(path: str, **_: Any) -> UUID:
        return project_id(path)

    @event("Created")
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

    @event("Granted")
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

    @event("Revoked")
    def _revoked(self, username: str, permissions: list[str], by: str, at: datetime) -> None:
        left = [p for p in self.grants.get(username, []) if p not in permissions]
        if left:
            self.grants[username] = left
        else:
            self.grants.pop(username, None)

    def delete(self, *, by: str, at: datetime) -> None:
        self._alive()
        self._deleted(by=by, at=at)

    @event("Deleted")
    def _deleted(self, by: str, at: datetime) -> None:
        self.deleted = True

    def restore(self, *, by: str, at: datetime) -> None:
        """A deleted path made again: it starts empty, as a new project would."""
        if self.deleted:
            self._restored(by=by, at=at)

    @event("Restored")
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

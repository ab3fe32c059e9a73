"""The tenancy view: organizations, groups and users by id and name, mirrored from their aggregates.

Builds the `Principal` a request acts as, with the same `principal_for` the domain uses, so an access
decision made from this view is the one the aggregates would make; its project grants come from the Project
events, kept here by path and username.
"""

from __future__ import annotations

import threading
from datetime import datetime
from typing import Any
from uuid import UUID

import msgspec

from domain.tenancy.common import Source
from domain.tenancy.group import Group
from domain.tenancy.organization import Organization
from domain.tenancy.permissions import Principal, principal_for
from domain.tenancy.user import User
from projections import events
from projections.base import Mirror, Projection, as_uuid, on


class OrganizationRow(msgspec.Struct, frozen=True, kw_only=True):
    id: UUID
    name: str
    priority: int
    owners: list[UUID]


class GroupRow(msgspec.Struct, frozen=True, kw_only=True):
    id: UUID
    organization_id: UUID
    name: str
    priority: int
    preempt: list[UUID]
    members: dict[str, str]
    explainers: list[UUID]
    gid: int | None = None
    default_project: str = ""


class UserRow(msgspec.Struct, frozen=True, kw_only=True):
    id: UUID
    organization_id: UUID | None
    username: str
    email: str
    role: str
    priority: int
    disabled: bool
    groups: list[UUID]
    uid: int | None = None


class TenancyView(Projection):
    """Tenants and accounts; never exposes password hashes."""

    transient = ("_rows",)

    def __init__(self, lock: threading.RLock | None = None) -> None:
        super().__init__(lock)
        # a user's row as this revision of the view made it: every request's authentication and every stage's
        # workflow token ask for one (a row scans every group for the user's memberships)
        self._rows: dict[UUID, tuple[int, UserRow]] = {}
        self.orgs: Mirror[Organization] = Mirror()
        self.groups_: Mirror[Group] = Mirror()
        self.users_: Mirror[User] = Mirror()
        self.revoked_: dict[str, datetime] = {}
        self.project_paths: dict[UUID, str] = {}
        self.project_grants: dict[str, dict[str, list[str]]] = {}  # path -> username (lowercase) -> permissions

    def is_revoked(self, jti: str) -> bool:
        """True once a `RevokedToken.Revoked` event named this token id."""
        with self.lock:
            return jti in self._revoked()

    def _revoked(self) -> dict[str, datetime]:
        # a view restored from a snapshot taken before revocations existed has no such attribute yet
        revoked: dict[str, datetime] = self.__dict__.setdefault("revoked_", {})
        return revoked

    def organizations(self) -> list[OrganizationRow]:
        with self.lock:
            return sorted((self._org(o) for o in self.orgs.values()), key=lambda r: r.name)

    def organization(self, org_id: UUID | str) -> OrganizationRow | None:
        with self.lock:
            org = self.orgs.get(org_id)
            return self._org(org) if org else None

    def organization_by_name(self, name: str) -> OrganizationRow | None:
        return next((o for o in self.organizations() if o.name == name), None)

    def groups(self, organization_id: UUID | str | None = None) -> list[GroupRow]:
        wanted = as_uuid(organization_id)
        with self.lock:
            rows = [self._group(g) for g in self.groups_.values() if wanted is None or g.organization_id == wanted]
        return sorted(rows, key=lambda r: r.name)

    def group(self, group_id: UUID | str) -> GroupRow | None:
        with self.lock:
            group = self.groups_.get(group_id)
            return self._group(group) if group else None

    def group_by_name(self, organization_id: UUID | str, name: str) -> GroupRow | None:
        return next((g for g in self.groups(organization_id) if g.name == name), None)

    def users(self, organization_id: UUID | str | None = None) -> list[UserRow]:
        wanted = as_uuid(organization_id)
        with self.lock:
            rows = [self._user(u) for u in self.users_.values() if wanted is None or u.organization_id == wanted]
        return sorted(rows, key=lambda r: r.username)

    def user(self, user_id: UUID | str) -> UserRow | None:
        with self.lock:
            user = self.users_.get(user_id)
            if not user:
                return None
            known = self._rows.get(user.id)
            if known is None or known[0] != self.revision:
                known = self._rows[user.id] = (self.revision, self._user(user))
            return known[1]

    def user_by_name(self, username: str) -> UserRow | None:
        return next((u for u in self.users() if u.username == username), None)

    def principal_for(self, user_id: UUID | str, source: Source = Source.ADMIN) -> Principal | None:
        """The principal of an account as its groups stand now; None for an unknown or disabled account."""
        with self.lock:
            user = self.users_.get(user_id)
            if user is None or user.disabled:
                return None
            return principal_for(user, self.groups_.values(), source, self.grants_of(user.username))

    def admin_ids(self) -> tuple[str, ...]:
        """The cluster admins' user ids (they may submit into any project)."""
        with self.lock:
            return tuple(str(u.id) for u in self.users_.values() if u.role.value == "cluster_admin" and not u.disabled)

    def grants_of(self, username: str) -> list[tuple[str, str]]:
        """(project path, permission) of every project grant the user holds."""
        wanted = username.lower()
        return [(path, permission) for path, users in self.__dict__.get("project_grants", {}).items()
                for permission in users.get(wanted, ())]

    def owner_priorities(self, owner: dict[str, str]) -> dict[str, int]:
        """A workflow owner's priority inputs as allocations record them (`organization_priority`, ...)."""
        with self.lock:
            found = self.priorities(*(as_uuid(owner.get(f"{k}_id") or None) for k in ("organization", "group", "user")))
        return {f"{kind}_priority": value for kind, value in found.items()}

    def priorities(self, organization_id: Any, group_id: Any, user_id: Any) -> dict[str, int]:
        """The owner's current priority inputs (0 for anything unknown)."""
        found = [self.orgs.get(organization_id), self.groups_.get(group_id), self.users_.get(user_id)]
        kinds = ("organization", "group", "user")
        return {key: (a.priority if a is not None else 0) for key, a in zip(kinds, found, strict=True)}

    def job_identity(self, user_id: Any, group_id: Any) -> dict[str, Any]:
        """Whom a root agent runs the owner's jobs as: {"uid", "gid", "groups", "username"}, or {} for an owner without a uid.

        The primary gid is the workflow's group's, else the user's own (equal to its uid, a user private group);
        the supplementary groups are the gids of every group the user belongs to."""
        with self.lock:
            user = self.users_.get(user_id)
            if user is None or user.uid is None:
                return {}
            group = self.groups_.get(group_id) if group_id else None
            gids = sorted({g.gid for g in self.groups_.values() if user.id in g.members and g.gid is not None})
        primary = group.gid if group is not None and group.gid is not None else user.uid
        return {"uid": user.uid, "gid": primary, "groups": gids, "username": user.username}

    def _org(self, o: Organization) -> OrganizationRow:
        return OrganizationRow(id=o.id, name=o.name, priority=o.priority, owners=list(o.owners))

    def _group(self, g: Group) -> GroupRow:
        return GroupRow(id=g.id, organization_id=g.organization_id, name=g.name, priority=g.priority,
                        preempt=list(g.preempt), members={str(k): v.value for k, v in g.members.items()},
                        explainers=list(g.explainers), gid=g.gid, default_project=g.default_project)

    def _user(self, u: User) -> UserRow:
        groups = [g.id for g in self.groups_.values() if u.id in g.members]
        return UserRow(id=u.id, organization_id=u.organization_id, username=u.username, email=u.email,
                       role=u.role.value, priority=u.priority, disabled=u.disabled, groups=groups, uid=u.uid)

    @on(Organization.Event)
    def _organization(self, event: Organization.Event) -> None:
        self.orgs.apply(event)

    @on(Group.Event)
    def _group_event(self, event: Group.Event) -> None:
        self.groups_.apply(event)

    @on(User.Event)
    def _user_event(self, event: User.Event) -> None:
        self.users_.apply(event)

    @on(events.TokenRevoked)
    def _token_revoked(self, event: events.TokenRevoked) -> None:
        revoked = self._revoked()
        revoked[event.jti] = event.expires
        for jti in [j for j, expires in revoked.items() if expires < event.at]:  # past expiry: refused anyway
            del revoked[jti]

    @on(events.ProjectCreated)
    def _project_created(self, event: events.ProjectCreated) -> None:
        self.project_paths[event.originator_id] = event.path

    @on(events.ProjectGranted, events.ProjectRevoked)
    def _project_grant(self, event: events.ProjectGranted | events.ProjectRevoked) -> None:
        path = self.project_paths.get(event.originator_id)
        if path is None:
            return
        users = self.project_grants.setdefault(path, {})
        held = users.get(event.username.lower(), [])
        if type(event).__qualname__.endswith("Granted"):
            users[event.username.lower()] = held + [p for p in event.permissions if p not in held]
        else:
            users[event.username.lower()] = [p for p in held if p not in event.permissions]

    @on(events.ProjectDeleted, events.ProjectRestored)
    def _project_gone(self, event: events.ProjectDeleted | events.ProjectRestored) -> None:
        self.project_grants.pop(self.project_paths.get(event.originator_id, ""), None)

"""Tenancy handlers: organizations, users, groups and membership, POSIX ids, priorities (login, passwords and tokens:
domain.app.credentials)."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from domain.app import access, posix
from domain.app.allocations import Allocations
from domain.app.config import ConfigHandlers
from domain.app.credentials import CredentialHandlers, PasswordHasher, tenancy_errors
from domain.app.errors import Conflict, Invalid, NotFound, invalid
from domain.app.ids import group_id, org_id, user_id
from domain.app.unit_of_work import UnitOfWork, command
from domain.fuzzfile import Problem
from domain.tenancy import Group, Organization, Role, User
from domain.tenancy.lockout import StrangerLockout
from domain.tenancy.passwords import password_problems
from domain.tenancy.permissions import Action, Principal, Resource


class TenancyHandlers(CredentialHandlers):
    """Organizations, users, groups and membership, POSIX ids and priorities; and (CredentialHandlers) logins,
    passwords and tokens."""

    def __init__(self, uow: UnitOfWork, allocations: Allocations, passwords: PasswordHasher,
                 configuration: ConfigHandlers) -> None:
        self.uow, self.allocations, self.passwords = uow, allocations, passwords
        self.configuration = configuration
        self.strangers = StrangerLockout()

    @command
    def create_organization(self, name: str, principal: Principal, at: datetime) -> UUID:
        access.organization_creator(principal)
        oid = org_id(name)
        if oid in self.uow.repository:
            raise Conflict(f"organization {name!r} already exists")
        # A set-up principal (`roving up`, no account) records None as the owner, as it always has.
        owners = [principal.user_id]
        with tenancy_errors():
            org = Organization.create(oid, name, owners, by=principal.username, at=at)  # type: ignore[arg-type]
        self.uow.save(org)
        return oid

    def create_user(self, organization: UUID | None, username: str, email: str, password: str, role: str,
                    principal: Principal, at: datetime) -> UUID:
        """Checked and hashed once, then registered: a registration that loses a race for the next uid decides
        again without paying for the hash again."""
        wanted = self._account_role(organization, role, principal)
        problems = password_problems(password, username, email)
        if problems:
            raise Invalid([Problem(path="password", message=p) for p in problems])
        if user_id(username) in self.uow.repository:
            raise Conflict(f"user {username!r} already exists")
        return self._register(organization, username, email, self.passwords.hash(password), wanted, principal, at)

    def _account_role(self, organization: UUID | None, role: str, principal: Principal) -> Role:
        self._may_manage_users(organization, principal)
        try:
            wanted = Role(role or "user")
        except ValueError as error:
            raise invalid("role", f"unknown role {role!r}; use one of {', '.join(r.value for r in Role)}") from error
        access.role_grantor(principal, wanted)
        return wanted

    @command
    def _register(self, organization: UUID | None, username: str, email: str, password_hash: str, wanted: Role,
                  principal: Principal, at: datetime) -> UUID:
        self._account_role(organization, wanted.value, principal)  # again, on the state this attempt decides from
        uid = user_id(username)
        if uid in self.uow.repository:
            raise Conflict(f"user {username!r} already exists")
        with tenancy_errors():
            user = User.register(uid, organization, username, email, password_hash, wanted, by=principal.username,
                                 at=at)
        touched = [user, posix.allocate(self.uow, user, self.configuration.scheduler_config(), principal.username, at)]
        if wanted is Role.ORG_OWNER and organization is not None:
            org = self.uow.load(Organization, organization, "organization")
            org.add_owner(uid, by=principal.username, at=at)
            touched.append(org)
        self.uow.save(*touched)
        return uid

    @command
    def unlock_user(self, user: UUID, principal: Principal, at: datetime) -> None:
        """Lift a login lock early: cluster admins, and the owners of the user's organization."""
        found = self.uow.load(User, user, "user")
        self._may_manage_users(found.organization_id, principal)
        found.unlock(by=principal.username, at=at)
        self.uow.save(found)

    @command
    def set_priority(self, kind: str, target: UUID, priority: int, principal: Principal, at: datetime) -> None:
        kinds: dict[str, type[Organization | Group | User]] = {"organization": Organization, "group": Group,
                                                                "user": User}
        aggregate_class = kinds.get(kind)
        if aggregate_class is None:
            raise invalid("kind", "must be organization, group or user")
        aggregate = self.uow.load(aggregate_class, target, kind)
        organization = target if kind == "organization" else getattr(aggregate, "organization_id", None)
        resource = Resource(kind, organization, target if kind == "group" else None)
        access.decide(principal, PRIORITY_ACTIONS[kind], resource, kind)
        with tenancy_errors():
            aggregate.set_priority(priority, by=principal.username, by_role=principal.role, at=at)
        # The owner's live allocations follow, each with its own "Priority updated" event.
        self.allocations.propagate_priority(kind, target, int(aggregate.priority), principal.username, at, first=[aggregate])

    @command
    def create_group(self, organization: UUID, name: str, principal: Principal, at: datetime) -> UUID:
        self._may_manage_users(organization, principal)
        gid = group_id(organization, name)
        if gid in self.uow.repository:
            raise Conflict(f"group {name!r} already exists in this organization")
        with tenancy_errors():
            group = Group.create(gid, organization, name, [], by=principal.username, at=at)
        ids = posix.allocate(self.uow, group, self.configuration.scheduler_config(), principal.username, at)
        self.uow.save(group, ids)
        return gid

    @command
    def set_posix_id(self, kind: str, target: UUID, number: int | None, principal: Principal, at: datetime) -> int:
        """A cluster admin sets a user's uid (kind "user") or a group's gid (kind "group"); None: the next free one
        of the range, for an account made before ids existed (one that has an id keeps it). Returns the id."""
        found_class: type[User | Group] = User if kind == "user" else Group
        found = self.uow.load(found_class, target, kind)
        self._may_manage_users(found.organization_id, principal)  # another tenant's id stays unknown (404)
        access.posix_id_setter(principal)
        config = self.configuration.scheduler_config()
        if number is None:
            ids = posix.allocate(self.uow, found, config, principal.username, at)
        else:
            ids = posix.assign(self.uow, found, number, config, principal.username, at)
        self.uow.save(found, ids)
        return found.uid if isinstance(found, User) else found.gid  # type: ignore[return-value]  # set just above

    @command
    def set_preempt_list(self, group: UUID, group_ids: list[UUID], principal: Principal, at: datetime) -> None:
        found = self.uow.load(Group, group, "group")
        access.decide(principal, Action.SET_PREEMPT_LIST, Resource.group(found.organization_id, group), "group")
        for other in group_ids:
            target = self.uow.repository.get(other) if other in self.uow.repository else None
            if not isinstance(target, Group) or target.organization_id != found.organization_id:
                raise invalid("groups", f"group {other} is not a group of this organization")
        with tenancy_errors():
            found.set_preempt_list(list(group_ids), by=principal.username, by_role=principal.role, at=at)
        self.uow.save(found)

    @command
    def add_member(self, group: UUID, user: UUID, role: str, principal: Principal, at: datetime) -> None:
        found, _ = self._membership(group, user, principal)
        if (role or "member") not in GROUP_ROLE_NAMES:
            raise invalid("role", f"a group role is member or group_owner, got {role!r}")
        with tenancy_errors():
            found.add_member(user, Role(role or "member"), by=principal.username, at=at)
        self.uow.save(found)

    @command
    def remove_member(self, group: UUID, user: UUID, principal: Principal, at: datetime) -> None:
        found, _ = self._membership(group, user, principal)
        with tenancy_errors():
            found.remove_member(user, by=principal.username, at=at)
        self.uow.save(found)

    @command
    def set_explainer(self, group: UUID, user: UUID, granted: bool, principal: Principal, at: datetime) -> None:
        """Grant or revoke `explain_allocation` on a group: its holder may ask why any of the group's work waits.

        It opens other people's queue entries, so the organization's owners grant it, not the group's."""
        found, _ = self._membership(group, user, principal, Action.GRANT_EXPLAIN)
        with tenancy_errors():
            if granted:
                found.grant_explain_allocation(user, by=principal.username, at=at)
            else:
                found.revoke_explain_allocation(user, by=principal.username, at=at)
        self.uow.save(found)

    def _membership(self, group: UUID, user: UUID, principal: Principal,
                    action: Action = Action.MANAGE_GROUP_MEMBERS) -> tuple[Group, User]:
        """A group on which the caller may take `action` (managing members: group owners too) and a user of the
        same organization."""
        found = self.uow.load(Group, group, "group")
        access.decide(principal, action, Resource.group(found.organization_id, group), "group")
        member = self.uow.load(User, user, "user")
        if member.organization_id != found.organization_id:
            raise NotFound("user")
        return found, member

    def _may_manage_users(self, organization: UUID | None, principal: Principal) -> None:
        """Cluster admins and the organization's owners; its other members are refused (403), others 404."""
        if principal.is_cluster_admin:
            if organization is not None and organization not in self.uow.repository:
                raise NotFound("organization")
            return
        if organization is None:
            raise NotFound("organization")
        access.decide(principal, Action.MANAGE_USERS, Resource.organization(organization), "organization")


GROUP_ROLE_NAMES = (Role.MEMBER.value, Role.GROUP_OWNER.value)
PRIORITY_ACTIONS = {"organization": Action.SET_ORG_PRIORITY, "group": Action.SET_GROUP_PRIORITY,
                    "user": Action.SET_USER_PRIORITY}

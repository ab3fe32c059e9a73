"""The Group aggregate: a team inside an organization, its priority, preempt allow-list, members and roles.

Members hold a group role (`member` or `group_owner`); `explain_allocation` is a separate grant that
lets its holder ask why any of the group's allocations waits, without owning them. A group may name a default
project: where its members' work goes when it names none.
"""

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
    role_name,
)

GROUP_ROLES = frozenset({Role.MEMBER, Role.GROUP_OWNER})
POLICY_SETTERS = {Role.ORG_OWNER, Role.CLUSTER_ADMIN}


class Group(TenantAggregate):
    gid: int | None = None  # the POSIX gid of its members' jobs (PosixIds decides it); groups before ids had none
    default_project: str = ""  # where its members' work goes when it names no project ("" the cluster's default)
    class PriorityUpdated(PriorityMessage, TenantAggregate.Event):
        kind = "group"
        old: int
        new: int
        by: str
        by_role: Role
        at: datetime

    class Created(TenantAggregate.Created):
        organization_id: UUID
        name: str
        owners: list[UUID]
        by: str
        at: datetime

    @event(Created)
    def __init__(self, id: UUID, organization_id: UUID, name: str, owners: list[UUID], by: str, at: datetime) -> None:
        self.organization_id, self.name = organization_id, name
        self.priority = 0
        self.preempt: list[UUID] = []
        self.members: dict[UUID, Role] = {user_id: Role.GROUP_OWNER for user_id in owners}
        self.explainers: list[UUID] = []

    @classmethod
    def create(cls, id: UUID, organization_id: UUID, name: str, owners: list[UUID] | None = None, *,
               by: str, at: datetime) -> Group:
        """A new group at priority 0 whose first owners are also its first members."""
        name = require_name("name", name)
        return cls(id=id, organization_id=organization_id, name=name, owners=list(dict.fromkeys(owners or [])),
                   by=by, at=require_aware(at))

    @property
    def owners(self) -> list[UUID]:
        return [user_id for user_id, role in self.members.items() if role is Role.GROUP_OWNER]

    def set_priority(self, priority: int, *, by: str, by_role: Role, at: datetime) -> bool:
        """An org owner (of this group's organization) or a cluster admin; returns False when unchanged."""
        require_role(by_role, POLICY_SETTERS, "set a group's priority")
        priority = require_priority(priority)
        if priority == self.priority:
            return False
        self._priority_updated(old=self.priority, new=priority, by=by, by_role=by_role, at=require_aware(at))
        return True

    @event(PriorityUpdated)
    def _priority_updated(self, old: int, new: int, by: str, by_role: Role, at: datetime) -> None:
        self.priority = new

    def set_gid(self, gid: int, *, by: str, at: datetime) -> bool:
        """Record the gid PosixIds gave this group (allocated or set by an admin); False when unchanged."""
        if gid == self.gid:
            return False
        self._gid_set(gid=gid, by=by, at=require_aware(at))
        return True

    @event("GidSet")
    def _gid_set(self, gid: int, by: str, at: datetime) -> None:
        self.gid = gid

    def set_default_project(self, path: str, *, by: str, by_role: Role, at: datetime) -> bool:
        """An org owner or a cluster admin; "" goes back to the cluster's default. False when unchanged."""
        require_role(by_role, POLICY_SETTERS, "set a group's default project")
        if path == self.default_project:
            return False
        self._default_project_set(path=path, by=by, by_role=by_role, at=require_aware(at))
        return True

    @event("DefaultProjectSet")
    def _default_project_set(self, path: str, by: str, by_role: Role, at: datetime) -> None:
        self.default_project = path

    def set_preempt_list(self, group_ids: list[UUID], *, by: str, by_role: Role, at: datetime) -> bool:
        """Which groups' preemptible work this group's work may preempt; never itself."""
        require_role(by_role, POLICY_SETTERS, "set a group's preempt list")
        if self.id in group_ids:
            raise TenancyError("preempt", f"group {self.name} cannot list itself as preemptible")
        wanted = list(dict.fromkeys(group_ids))
        if wanted == self.preempt:
            return False
        self._preempt_list_set(group_ids=wanted, by=by, by_role=by_role, at=require_aware(at))
        return True

    @event("PreemptListSet")
    def _preempt_list_set(self, group_ids: list[UUID], by: str, by_role: Role, at: datetime) -> None:
        self.preempt = list(group_ids)

    def may_preempt(self, group_id: UUID) -> bool:
        return group_id in self.preempt

    def add_member(self, user_id: UUID, role: Role = Role.MEMBER, *, by: str, at: datetime) -> None:
        """Add a user or change a member's group role (`member` or `group_owner`)."""
        if role not in GROUP_ROLES:
            raise TenancyError("role", f"a group role is member or group_owner, got {role_name(role)}")
        if self.members.get(user_id) is not role:
            self._member_set(user_id=user_id, role=role, by=by, at=require_aware(at))

    @event("MemberSet")
    def _member_set(self, user_id: UUID, role: Role, by: str, at: datetime) -> None:
        self.members[user_id] = role

    def remove_member(self, user_id: UUID, *, by: str, at: datetime) -> None:
        if user_id not in self.members:
            raise TenancyError("members", f"user {user_id} is not a member of group {self.name}")
        self._member_removed(user_id=user_id, by=by, at=require_aware(at))

    @event("MemberRemoved")
    def _member_removed(self, user_id: UUID, by: str, at: datetime) -> None:
        # Leaving the group also ends the right to see into its queue.
        del self.members[user_id]
        if user_id in self.explainers:
            self.explainers.remove(user_id)

    def grant_explain_allocation(self, user_id: UUID, *, by: str, at: datetime) -> None:
        if user_id not in self.explainers:
            self._explain_granted(user_id=user_id, by=by, at=require_aware(at))

    @event("ExplainAllocationGranted")
    def _explain_granted(self, user_id: UUID, by: str, at: datetime) -> None:
        self.explainers.append(user_id)

    def revoke_explain_allocation(self, user_id: UUID, *, by: str, at: datetime) -> None:
        if user_id not in self.explainers:
            raise TenancyError("explain_allocation", f"user {user_id} does not hold it on group {self.name}")
        self._explain_revoked(user_id=user_id, by=by, at=require_aware(at))

    @event("ExplainAllocationRevoked")
    def _explain_revoked(self, user_id: UUID, by: str, at: datetime) -> None:
        self.explainers.remove(user_id)

"""Who may do what: a pure Principal, resources by tenant, and decisions that say allowed, forbidden or not visible.

A resource in another organization is *not visible* (the API answers 404, so tenants cannot learn what
others have); a resource the principal can see but not act on is *forbidden* (403). Work (workflows and
allocations) is visible only to its owner, its group's members, explain_allocation holders on that group,
the organization's owners and cluster admins. A grant on a project (`workflow:view`, `workflow:stop`,
`allocation:explain`) extends the matching permission to the work of that project's whole subtree, within the
holder's own organization.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from uuid import UUID

import msgspec

from domain.project_paths import within
from domain.tenancy.common import Role, Source
from domain.tenancy.group import Group
from domain.tenancy.user import User


class Action(str, enum.Enum):
    SET_ORG_PRIORITY = "set_org_priority"
    SET_GROUP_PRIORITY = "set_group_priority"
    SET_USER_PRIORITY = "set_user_priority"
    SET_PREEMPT_LIST = "set_preempt_list"
    MANAGE_GROUP_MEMBERS = "manage_group_members"
    MANAGE_USERS = "manage_users"
    GRANT_EXPLAIN = "grant_explain"
    VIEW_CLUSTER_QUEUE = "view_cluster_queue"
    VIEW_WORKFLOW = "view_workflow"
    STOP_WORKFLOW = "stop_workflow"
    EXPLAIN_ALLOCATION = "explain_allocation"
    MANAGE_NODES = "manage_nodes"
    CONFIG = "config"
    AUDIT_ORG = "audit_org"
    AUDIT_ALL = "audit_all"
    RECEIVE_ALERTS = "receive_alerts"


class Outcome(str, enum.Enum):
    ALLOWED = "allowed"
    FORBIDDEN = "forbidden"      # visible but not permitted: 403
    NOT_VISIBLE = "not_visible"  # another tenant's, or work the principal may not see: 404


class Principal(msgspec.Struct, frozen=True):
    """Who is asking: an account's identity and memberships, or a cluster component (by `source`)."""

    user_id: UUID | None
    username: str
    role: Role
    organization_id: UUID | None
    group_ids: frozenset[UUID] = frozenset()
    owned_group_ids: frozenset[UUID] = frozenset()
    explain_group_ids: frozenset[UUID] = frozenset()
    is_cluster_admin: bool = False
    source: Source = Source.ADMIN
    project_grants: frozenset[tuple[str, str]] = frozenset()  # (project path, permission) held on that subtree

    def __post_init__(self) -> None:
        if self.is_cluster_admin != (self.role is Role.CLUSTER_ADMIN):
            raise ValueError(f"is_cluster_admin={self.is_cluster_admin} contradicts role {self.role.value}")

    def owns_organization(self, organization_id: UUID | None) -> bool:
        return self.role is Role.ORG_OWNER and organization_id is not None and organization_id == self.organization_id

    def granted(self, project: str, *permissions: str) -> str | None:
        """The project whose grant of one of `permissions` covers `project` (itself or an ancestor), or None."""
        if project:
            for scope, permission in self.project_grants:
                if permission in permissions and within(project, scope):
                    return scope
        return None


class Resource(msgspec.Struct, frozen=True):
    """What is acted on; `organization_id` None means cluster-wide (nodes, config, the cluster queue)."""

    kind: str
    organization_id: UUID | None = None
    group_id: UUID | None = None
    owner_id: UUID | None = None
    project: str = ""  # work: the project path it counts toward

    @classmethod
    def cluster(cls) -> Resource:
        return cls("cluster")

    @classmethod
    def organization(cls, organization_id: UUID) -> Resource:
        return cls("organization", organization_id)

    @classmethod
    def group(cls, organization_id: UUID, group_id: UUID) -> Resource:
        return cls("group", organization_id, group_id)

    @classmethod
    def user(cls, organization_id: UUID | None, user_id: UUID) -> Resource:
        return cls("user", organization_id, owner_id=user_id)

    @classmethod
    def workflow(cls, organization_id: UUID, group_id: UUID | None, owner_id: UUID) -> Resource:
        return cls("workflow", organization_id, group_id, owner_id)

    @classmethod
    def allocation(cls, organization_id: UUID, group_id: UUID | None, owner_id: UUID) -> Resource:
        return cls("allocation", organization_id, group_id, owner_id)

    @property
    def is_work(self) -> bool:
        return self.kind in ("workflow", "allocation")


class Decision(msgspec.Struct, frozen=True):
    outcome: Outcome
    reason: str

    @property
    def allowed(self) -> bool:
        return self.outcome is Outcome.ALLOWED

    @property
    def visible(self) -> bool:
        return self.outcome is not Outcome.NOT_VISIBLE


class Denied(Exception):
    """Raised by `authorize`; `decision.outcome` tells the API whether to answer 403 or 404."""

    def __init__(self, decision: Decision) -> None:
        super().__init__(decision.reason)
        self.decision = decision


Rule = Callable[[Principal, Resource], str | None]  # the reason it is allowed, or None


def can(principal: Principal, action: Action, resource: Resource) -> Decision:
    """Decide one action on one resource, with the reason."""
    if not _same_tenant(principal, resource):
        return Decision(Outcome.NOT_VISIBLE, f"{resource.kind} belongs to another organization")
    if principal.source is not Source.ADMIN and action not in COMPONENT_ACTIONS.get(principal.source, ()):
        return Decision(Outcome.FORBIDDEN, f"a {principal.source.value} principal may not {action.value}")
    why, who = RULES[action]
    reason = why(principal, resource)
    if reason is not None:
        return Decision(Outcome.ALLOWED, reason)
    if resource.is_work and not _sees_work(principal, resource):
        return Decision(Outcome.NOT_VISIBLE, f"{resource.kind} of another user outside your groups")
    return Decision(Outcome.FORBIDDEN, f"only {who} may {action.value}")


def authorize(principal: Principal, action: Action, resource: Resource) -> Decision:
    """`can`, raising Denied unless allowed."""
    decision = can(principal, action, resource)
    if not decision.allowed:
        raise Denied(decision)
    return decision


def principal_for(user: User, groups: Iterable[Group], source: Source = Source.ADMIN,
                  project_grants: Iterable[tuple[str, str]] = ()) -> Principal:
    """The principal of a user account, from its aggregate, the groups that mention it and its project grants."""
    groups = list(groups)
    return Principal(
        user_id=user.id, username=user.username, role=user.role, organization_id=user.organization_id,
        group_ids=frozenset(g.id for g in groups if user.id in g.members),
        owned_group_ids=frozenset(g.id for g in groups if user.id in g.owners),
        explain_group_ids=frozenset(g.id for g in groups if user.id in g.explainers),
        is_cluster_admin=user.role is Role.CLUSTER_ADMIN, source=source, project_grants=frozenset(project_grants),
    )


def _same_tenant(p: Principal, r: Resource) -> bool:
    return p.is_cluster_admin or r.organization_id is None or r.organization_id == p.organization_id


def _sees_work(p: Principal, r: Resource) -> bool:
    return (p.is_cluster_admin or p.owns_organization(r.organization_id)
            or (r.owner_id is not None and r.owner_id == p.user_id)
            or r.group_id in p.group_ids or r.group_id in p.explain_group_ids
            or p.granted(r.project, *PROJECT_GRANTS) is not None)


def _admin(p: Principal, r: Resource) -> str | None:
    return "cluster admin" if p.is_cluster_admin else None


def _org_owner_or_admin(p: Principal, r: Resource) -> str | None:
    return _admin(p, r) or ("owner of the organization" if p.owns_organization(r.organization_id) else None)


def _group_owner_or_above(p: Principal, r: Resource) -> str | None:
    return _org_owner_or_admin(p, r) or ("owner of the group" if r.group_id in p.owned_group_ids else None)


def _views_work(p: Principal, r: Resource) -> str | None:
    if r.owner_id is not None and r.owner_id == p.user_id:
        return f"your own {r.kind}"
    if r.group_id is not None and r.group_id in p.group_ids:
        return f"{r.kind} of your group"
    return _org_owner_or_admin(p, r) or _project_grant(p, r, "workflow:view", "workflow:stop")


def _stops_work(p: Principal, r: Resource) -> str | None:
    """A groupmate sees the work but may not stop it: its owner, its group's owner and above may."""
    if r.owner_id is not None and r.owner_id == p.user_id:
        return f"your own {r.kind}"
    return _group_owner_or_above(p, r) or _project_grant(p, r, "workflow:stop")


def _explains(p: Principal, r: Resource) -> str | None:
    if r.owner_id is not None and r.owner_id == p.user_id:
        return "your own allocation"
    if r.group_id is not None and r.group_id in p.explain_group_ids:
        return "holds explain_allocation on the group"
    return _admin(p, r) or _project_grant(p, r, "allocation:explain")


PROJECT_GRANTS = ("workflow:view", "workflow:stop", "allocation:explain")


def _project_grant(p: Principal, r: Resource, *permissions: str) -> str | None:
    scope = p.granted(r.project, *permissions)
    return f"holds {permissions[0]} on project {scope}" if scope is not None else None


def _monitoring(p: Principal, r: Resource) -> str | None:
    return "monitoring webhook" if p.source is Source.MONITORING else _admin(p, r)


ADMIN = "a cluster admin"
ORG = "an owner of the organization or a cluster admin"
GROUP = "a group owner, org owner or cluster admin"
RULES: dict[Action, tuple[Rule, str]] = {
    Action.SET_ORG_PRIORITY: (_admin, ADMIN),
    Action.SET_GROUP_PRIORITY: (_org_owner_or_admin, ORG),
    Action.SET_USER_PRIORITY: (_org_owner_or_admin, ORG),
    Action.SET_PREEMPT_LIST: (_org_owner_or_admin, ORG),
    Action.MANAGE_GROUP_MEMBERS: (_group_owner_or_above, GROUP),
    Action.MANAGE_USERS: (_org_owner_or_admin, ORG),
    Action.GRANT_EXPLAIN: (_org_owner_or_admin, ORG),
    Action.VIEW_CLUSTER_QUEUE: (_admin, ADMIN),
    Action.VIEW_WORKFLOW: (_views_work, "its owner, its group's members, the organization's owners or a cluster admin"),
    Action.STOP_WORKFLOW: (_stops_work,
                           "its owner, its group's owners, the organization's owners or a cluster admin"),
    Action.EXPLAIN_ALLOCATION: (_explains, "its owner, an explain_allocation holder on its group or a cluster admin"),
    Action.MANAGE_NODES: (_admin, ADMIN),
    Action.CONFIG: (_admin, ADMIN),
    Action.AUDIT_ORG: (_org_owner_or_admin, ORG),
    Action.AUDIT_ALL: (_admin, ADMIN),
    Action.RECEIVE_ALERTS: (_monitoring, "the monitoring webhook or a cluster admin"),
}
COMPONENT_ACTIONS: dict[Source, frozenset[Action]] = {
    Source.MONITORING: frozenset({Action.RECEIVE_ALERTS}),
    # a workflow's token acts for its owner on work only: never on tenancy, nodes, config or the audit
    Source.WORKFLOW: frozenset({Action.VIEW_WORKFLOW, Action.STOP_WORKFLOW, Action.EXPLAIN_ALLOCATION}),
}

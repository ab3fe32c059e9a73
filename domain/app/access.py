"""Who may do what, decided in one place: every command, and every query a route makes, asks here.

The answers keep the API's shape: a thing the caller may not see is not found (NotFound, or Denied with
outcome NOT_VISIBLE: 404), a thing they see but may not act on is forbidden (Forbidden, or Denied: 403).
Read-only view queries filter their rows with `visible`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

from domain.app.errors import Forbidden, NotFound
from domain.app.ids import node_id
from domain.endpoint import Endpoint, OwnerKind
from domain.ids import as_uuid
from domain.tenancy import Role, Source
from domain.tenancy.permissions import Action, Outcome, Principal, Resource, authorize, can

__all__ = ["Reach", "Resource", "authorize", "decide", "visible", "work"]


def decide(principal: Principal, action: Action, resource: Resource, what: str) -> None:
    """The permission model's answer as the API's: not visible is NotFound(what) (404), forbidden is 403."""
    decision = can(principal, action, resource)
    if decision.outcome is Outcome.NOT_VISIBLE:
        raise NotFound(what)
    if not decision.allowed:
        raise Forbidden(decision.reason)


def visible(principal: Principal, thing: Resource | Endpoint | None) -> bool:
    """May the caller see this row: work by `view_workflow`, organizations and groups by membership, endpoints by
    their scope within the caller's organization; a row whose owner is unknown (None), cluster admins only."""
    if thing is None:
        return principal.is_cluster_admin
    if isinstance(thing, Endpoint):
        return _lists_endpoint(principal, thing)
    if thing.is_work:
        return can(principal, Action.VIEW_WORKFLOW, thing).allowed
    return principal.is_cluster_admin or thing.organization_id == principal.organization_id


def check_visible(principal: Principal, thing: Resource | Endpoint | None, what: str) -> None:
    if not visible(principal, thing):
        raise NotFound(what)


def work(owner: Any, kind: str = "workflow") -> Resource:
    """A workflow's or allocation's resource from its owner (a dict of ids, or a view's Struct)."""
    org, group, user = (as_uuid(_owner_field(owner, k)) for k in ("organization", "group", "user"))
    project = owner.get("project") if isinstance(owner, dict) else getattr(owner, "project", "")
    return Resource(kind, org, group, user, project=str(project or ""))


def view_work(principal: Principal, owner: Any) -> None:
    """Reading a workflow (detail, events, logs): Denied, not visible (404) or forbidden (403), unless allowed."""
    authorize(principal, Action.VIEW_WORKFLOW, work(owner, "workflow"))


def stop_work(principal: Principal, owner: Any) -> None:
    """Its owner, its group's owners, the organization's owners or a cluster admin; a groupmate sees it only."""
    authorize(principal, Action.STOP_WORKFLOW, work(owner, "workflow"))


def explain_work(principal: Principal, owner: Any) -> None:
    """Why an allocation waits: its owner, an explain_allocation holder on its group or a cluster admin."""
    authorize(principal, Action.EXPLAIN_ALLOCATION, work(owner, "allocation"))


def explain_workflow(principal: Principal, owner: Any) -> None:
    """`why` and `explain` on a workflow: whoever may explain its allocations reads what those answers need.

    An explain_allocation holder on the work's group is not one of its viewers (its detail, events and logs stay
    closed), so this is asked instead of `view_work` then `explain_work`; others get the same answers as those.
    """
    if can(principal, Action.EXPLAIN_ALLOCATION, work(owner, "allocation")).allowed:
        return
    view_work(principal, owner)
    explain_work(principal, owner)


def submitter(principal: Principal) -> None:
    """People submit, and their running workflows (FB_WORKFLOW_TOKEN: a child is its parent's owner's, as if the
    owner had submitted it); agents and webhooks run work, they own none."""
    if principal.source not in (Source.ADMIN, Source.WORKFLOW):
        raise Forbidden(f"workflows are submitted with a user's token, not with the {principal.source.value} token")


def hold_source(principal: Principal) -> Source:
    """Managing nodes: a hold's source comes from the caller's identity, never from the request body."""
    if principal.source in (Source.MONITORING, Source.PROVISIONER):
        return principal.source
    if not principal.is_cluster_admin:
        raise Forbidden("managing nodes needs the cluster admin role")
    return Source.ADMIN


def hold_releaser(principal: Principal, force: bool) -> Source:
    """Releasing a hold: as `hold_source`; force (monitoring evidence an alert keeps) is a cluster admin's alone."""
    source = hold_source(principal)
    if force and source is not Source.ADMIN:
        raise Forbidden(f"releasing a hold with force needs a cluster admin (the {source.value} token may not)")
    return source


def alert_sender(principal: Principal) -> None:
    if principal.source.value != "monitoring" and not principal.is_cluster_admin:
        raise Forbidden("only the monitoring webhook principal may post alerts")


def node_metrics_reader(principal: Principal) -> None:
    """A node's metrics count every tenant's work on it: cluster admins and the monitoring token read them."""
    if principal.source is not Source.MONITORING and not principal.is_cluster_admin:
        raise Forbidden("a node's metrics are read by cluster admins and the monitoring token only")


def service_targets_reader(principal: Principal) -> None:
    """Where every tenant's autoscaled replicas listen, by workflow: for Prometheus' scrape, never a tenant's read."""
    if principal.source is not Source.MONITORING and not principal.is_cluster_admin:
        raise Forbidden("the replicas' scrape targets are read by cluster admins and the monitoring token only")


def organization_creator(principal: Principal) -> None:
    if not principal.is_cluster_admin:
        raise Forbidden("creating an organization needs the cluster admin role")


def role_grantor(principal: Principal, role: Role) -> None:
    """Who may create a user with `role` (managing the organization's users is decided by `decide`)."""
    if role is Role.CLUSTER_ADMIN and not principal.is_cluster_admin:
        raise Forbidden("only a cluster admin may create a cluster admin")


def config_reader(principal: Principal) -> None:
    authorize(principal, Action.CONFIG, Resource.cluster())


def config_changer(principal: Principal) -> None:
    if not principal.is_cluster_admin:
        raise Forbidden("the central configuration is changed by cluster admins only")


def project_admin(principal: Principal) -> None:
    """Projects (their quotas, members and grants) are cluster policy: cluster admins make and change them."""
    if not principal.is_cluster_admin:
        raise Forbidden("projects are made and changed by cluster admins only")


def sees_project(principal: Principal, path: str, members: list[str]) -> bool:
    """Cluster admins see every project; a user sees the projects they belong to, and those a `project:view` grant
    covers (on the project or an ancestor)."""
    if principal.is_cluster_admin:
        return True
    name = principal.username.lower()
    return any(m.lower() == name for m in members) or principal.granted(path, "project:view") is not None


def profile_changer(principal: Principal) -> None:
    if not principal.is_cluster_admin:
        raise Forbidden("application profiles are set and deleted by cluster admins only")


def profile_reader(principal: Principal) -> None:
    """Every user reads profiles (they name them in Fuzzfiles, and profiles hold no secrets); components do not."""
    if principal.source is not Source.ADMIN and not principal.is_cluster_admin:
        raise Forbidden(f"profiles are read with a user's token, not with the {principal.source.value} token")
NODE_PREFIX = "node/"  # a node's own token names its principal `node/NAME`


def node_admin(principal: Principal) -> None:
    """Node credentials are listed and revoked by cluster admins only."""
    if not principal.is_cluster_admin:
        raise Forbidden("node credentials are managed by cluster admins")


def own_node(principal: Principal, node: UUID) -> None:
    """A node's own token speaks for that node only; the shared agent token and admins for any."""
    if principal.source is Source.AGENT and principal.username.startswith(NODE_PREFIX):
        name = principal.username.removeprefix(NODE_PREFIX)
        if node_id(name) != node:
            raise Forbidden(f"this token is node {name}'s and speaks for no other node")


def agent(principal: Principal) -> None:
    """Only agents (and cluster admins, for repair) speak the agent protocol."""
    if principal.source is not Source.AGENT and not principal.is_cluster_admin:
        raise Forbidden("the agent protocol needs an agent token")


def federation_reader(principal: Principal) -> None:
    if not principal.is_cluster_admin:
        raise Forbidden("the federation API needs a cluster admin")


def sees_cluster_queue(principal: Principal) -> bool:
    """Everyone else sees only their own queue rows, whatever they asked."""
    return can(principal, Action.VIEW_CLUSTER_QUEUE, Resource.cluster()).allowed


@dataclass(frozen=True)
class Reach:
    """How much of the audit log a caller reads: all of it, or one organization's rows."""

    everything: bool
    organization: str = ""


def audit_reach(principal: Principal) -> Reach:
    if principal.is_cluster_admin:
        return Reach(everything=True)
    if principal.owns_organization(principal.organization_id):
        return Reach(everything=False, organization=str(principal.organization_id))
    raise Forbidden("reading the audit log needs a cluster admin or an organization owner")


def endpoint_owner_id(kind: Any, principal: Principal) -> str:
    """The owner a new endpoint gets when none is named: the creator, their first group or their organization."""
    if kind is OwnerKind.GROUP:
        groups = sorted(str(g) for g in principal.group_ids)
        return groups[0] if groups else ""
    if kind is OwnerKind.ORGANIZATION:
        return str(principal.organization_id or "")
    return str(principal.user_id or "")


def check_endpoint_owner(kind: Any, owner: str, principal: Principal) -> None:
    """An endpoint is owned by its creator, one of the creator's groups or the creator's organization;
    any other owner is answered as an unknown one (404), so no tenant learns another's ids."""
    if principal.is_cluster_admin or not isinstance(kind, OwnerKind):
        return  # an unknown kind is refused by Endpoint.create, naming the choices
    mine = {str(g) for g in principal.group_ids} if kind is OwnerKind.GROUP else {endpoint_owner_id(kind, principal)}
    if owner not in mine:
        raise NotFound(kind.value)


def manages_endpoint(endpoint: Endpoint, principal: Principal) -> bool:
    """The owner user, a member of the owner group, an owner of the owner organization, or a cluster admin."""
    if principal.is_cluster_admin:
        return True
    if endpoint.owner_kind is OwnerKind.USER:
        return endpoint.owner_id == str(principal.user_id)
    if endpoint.owner_kind is OwnerKind.GROUP:
        return endpoint.owner_id in {str(g) for g in principal.group_ids}
    return endpoint.owner_id == str(principal.organization_id)


def reaches(principal: Principal, endpoint: Endpoint) -> bool:
    """Scope rules, with cluster admins reaching every endpoint: who may call it through the proxy."""
    return principal.is_cluster_admin or endpoint.visible_to(
        str(principal.user_id) if principal.user_id else None, {str(g) for g in principal.group_ids},
        {str(principal.organization_id)} if principal.organization_id else set())


def _lists_endpoint(principal: Principal, endpoint: Endpoint) -> bool:
    """Who may read an endpoint's record (owner, binding): its own organization only, even when it is
    public; a public endpoint of another organization is reachable through the proxy, never listed."""
    same_tenant = principal.is_cluster_admin or endpoint.organization_id == str(principal.organization_id or "")
    return same_tenant and reaches(principal, endpoint)


def _owner_field(owner: Any, key: str) -> Any:
    if isinstance(owner, dict):
        return owner.get(f"{key}_id") or owner.get(key)
    return getattr(owner, f"{key}_id", None)


def posix_id_setter(principal: Principal) -> None:
    """A uid or gid is an identity on every node (files, processes): only cluster admins choose one."""
    if not principal.is_cluster_admin:
        raise Forbidden("setting a uid or gid needs the cluster admin role")

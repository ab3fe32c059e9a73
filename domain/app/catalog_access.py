"""Who owns, manages and sees a catalog source: the rules domain.app.catalog asks, in one place.

An owner named by someone who may not see it (another organization's group or organization) is answered as an
unknown one (404), so no tenant learns another's ids or names.
"""

from __future__ import annotations

import re
from typing import Any
from uuid import UUID

import msgspec

from domain.app.errors import NotFound, invalid
from domain.app.ids import group_id, org_id
from domain.catalog.source import CatalogSource, SourceScope
from domain.tenancy import Source
from domain.tenancy.group import Group
from domain.tenancy.organization import Organization
from domain.tenancy.permissions import Principal

USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/@]*@")


class Owner(msgspec.Struct, frozen=True):
    id: str
    name: str
    organization_id: str

    @property
    def managers(self) -> str:
        return "owners of the group, its organization's owners or cluster admins"


def owner_for(uow: Any, scope: SourceScope, owner: str, principal: Principal) -> Owner:
    """The group, organization or cluster a new source belongs to: `owner` names it (an id or a name in the
    caller's organization); left empty, the caller's organization, or the one group the caller owns."""
    if scope is SourceScope.CLUSTER:
        return Owner("", "cluster", "")
    if scope is SourceScope.ORGANIZATION:
        found = _organization(uow, owner or str(principal.organization_id or ""), principal)
        return Owner(str(found.id), found.name, str(found.id))
    group = _group(uow, owner, principal)
    return Owner(str(group.id), group.name, str(group.organization_id))


def may_manage(principal: Principal, scope: SourceScope, owner: Owner) -> bool:
    if principal.is_cluster_admin:
        return True
    if principal.source is not Source.ADMIN or scope is SourceScope.CLUSTER:
        return False
    organization = _uuid(owner.organization_id)
    if principal.owns_organization(organization):
        return True
    return scope is SourceScope.GROUP and _uuid(owner.id) in principal.owned_group_ids


def may_see(principal: Principal, source: CatalogSource) -> bool:
    """A group's members, an organization's members, every person for the cluster's; cluster admins all."""
    if principal.is_cluster_admin:
        return True
    if principal.source is not Source.ADMIN:
        return False
    if source.scope is SourceScope.CLUSTER:
        return True
    if source.scope is SourceScope.ORGANIZATION:
        return source.owner_id == str(principal.organization_id or "")
    return source.owner_id in {str(g) for g in principal.group_ids}


def shown_location(location: str) -> str:
    """A repository URL without the credentials it may carry (https://user:token@host/...)."""
    return USERINFO.sub(r"\1***@", location)


def _organization(uow: Any, wanted: str, principal: Principal) -> Organization:
    if not wanted:
        raise invalid("owner", "name the organization (its id or name)")
    found = _load(uow, _uuid(wanted) or org_id(wanted))
    if not isinstance(found, Organization) or not (principal.is_cluster_admin
                                                   or found.id == principal.organization_id):
        raise NotFound("organization")
    return found


def _group(uow: Any, wanted: str, principal: Principal) -> Group:
    if not wanted:
        owned = sorted(principal.owned_group_ids, key=str)
        if len(owned) != 1:
            raise invalid("owner", f"name the group (you own {len(owned)} groups)")
        wanted = str(owned[0])
    organization = principal.organization_id or UUID(int=0)
    found = _load(uow, _uuid(wanted) or group_id(organization, wanted))
    if not isinstance(found, Group) or not (principal.is_cluster_admin
                                            or found.organization_id == principal.organization_id):
        raise NotFound("group")
    return found


def _load(uow: Any, aggregate_id: UUID) -> Any:
    return uow.repository.get(aggregate_id) if aggregate_id in uow.repository else None


def _uuid(text: str | None) -> UUID | None:
    try:
        return UUID(str(text))
    except ValueError:
        return None

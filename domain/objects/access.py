"""Who may do what in the object store, and what a put does over what is there.

People and their workflows (a workflow's token speaks for its owner) keep objects; the cluster's own components
(agents, monitoring) do not. Each person has their own scope (`object://user/...`), which only they reach; a
group's scope (`object://group/GROUP/...`) is its members' and its organization's owners': any of them reads and
adds objects, while replacing (`--force`) or deleting one is for whoever put it there, the group's owners and the
organization's owners. A group the caller is not in is answered as one that does not exist (tenants never learn
what others keep); a cluster admin has no way into a group's objects but membership.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from uuid import UUID

import msgspec

from domain.app.errors import Conflict, Forbidden, NotFound
from domain.ids import group_id
from domain.objects.names import Location, Scope
from domain.tenancy import Source
from domain.tenancy.permissions import Principal

KEEPERS = (Source.ADMIN, Source.WORKFLOW)  # people's tokens and their workflows' tokens


class Holder(msgspec.Struct, frozen=True):
    """Whose objects a location is among: one user's or one group's (each holder has a bucket of its own)."""

    scope: Scope
    owner_id: UUID
    label: str  # the username or the group's name, for messages


class Verdict(str, enum.Enum):
    CREATED = "created"
    UNCHANGED = "unchanged"  # the same content was there already: nothing is written
    REPLACED = "replaced"


def holder_of(location: Location, principal: Principal, group_exists: Callable[[UUID], bool]) -> Holder:
    """The holder whose objects `location` names, if the caller may reach them (Forbidden, NotFound otherwise).
    `group_exists` asks the tenancy's view: an organization owner reaches the groups of their organization only."""
    if principal.source not in KEEPERS:
        raise Forbidden(f"the object store is for people and their workflows, not the {principal.source.value} token")
    if location.scope is Scope.USER:
        if principal.user_id is None:
            raise Forbidden("object://user/ needs a user's token")
        return Holder(Scope.USER, principal.user_id, principal.username)
    found = group_id(principal.organization_id, location.group) if principal.organization_id else None
    owner = principal.owns_organization(principal.organization_id)
    if found is None or not (found in principal.group_ids or (owner and group_exists(found))):
        raise NotFound(f"group {location.group!r}")  # as for a group that does not exist: members only learn of it
    return Holder(Scope.GROUP, found, location.group)


def may_replace(principal: Principal, holder: Holder, uploaded_by: str, what: str) -> None:
    """Replacing or deleting an object: in a user's scope its owner; in a group's its uploader, the group's owners
    and the organization's owners. `what` names the act for the refusal."""
    if holder.scope is Scope.USER:
        return
    if (uploaded_by and uploaded_by == str(principal.user_id)) or holder.owner_id in principal.owned_group_ids \
            or principal.owns_organization(principal.organization_id):
        return
    raise Forbidden(f"{what} an object of group {holder.label} is for whoever put it there, the group's owners "
                    "and the organization's owners")


def decide_put(location: Location, existing_digest: str | None, digest: str, force: bool) -> Verdict:
    """A put over nothing creates; over the same content it changes nothing; over other content it is refused
    unless forced (Conflict naming the way out)."""
    if existing_digest is None:
        return Verdict.CREATED
    if existing_digest == digest:
        return Verdict.UNCHANGED
    if not force:
        raise Conflict(f"{location.uri} already exists with different content; put it with --force to replace it")
    return Verdict.REPLACED

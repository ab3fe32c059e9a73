"""Tenancy routes: organizations, users, groups and membership, priorities, preempt lists, POSIX ids and
unlocking a user (login and the caller's own account are api.http.routes.accounts)."""

from __future__ import annotations

from typing import Annotated, Any, Literal
from uuid import UUID

import msgspec
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from api.http import answers as shapes
from api.http import fields
from api.http.answers import answers
from api.http.answers.tenancy import group_of, organization_of, user_of
from api.http.routes import common as c
from api.http.routes.names import Names, names
from domain.app import access
from domain.app.errors import NotFound
from domain.ids import MAX_POSIX_ID
from domain.scheduler.priority import PRIORITY_LIMIT
from projections.tenancy import GroupRow, OrganizationRow, UserRow


class Named(msgspec.Struct, forbid_unknown_fields=True):
    name: str


class NewUser(msgspec.Struct, forbid_unknown_fields=True):
    username: fields.Text
    email: fields.Email
    password: fields.Password
    role: str = "user"


class Priority(msgspec.Struct, forbid_unknown_fields=True):
    """The range is the domain's (it also refuses out of range); here it is also in the OpenAPI document."""

    priority: Annotated[int, msgspec.Meta(ge=-PRIORITY_LIMIT, le=PRIORITY_LIMIT)]


PosixId = Annotated[int, msgspec.Meta(ge=0, le=MAX_POSIX_ID)] | Literal["auto"]  # auto: the next free one


class Uid(msgspec.Struct, forbid_unknown_fields=True):
    uid: PosixId


class Gid(msgspec.Struct, forbid_unknown_fields=True):
    gid: PosixId


class PreemptList(msgspec.Struct, forbid_unknown_fields=True):
    groups: list[UUID]


class Membership(msgspec.Struct, forbid_unknown_fields=True):
    role: str = "member"


def method(request: Request, name: str) -> Any:
    """An application command by name; 501 while the application does not offer it yet."""
    found = getattr(c.services(request).roving, name, None)
    if found is None:
        raise HTTPException(501, f"{name} is not available in this control plane yet")
    return found


def own_org(request: Request) -> UUID:
    """The organization in the path, if the caller may see it: its members and cluster admins; else 404."""
    org = c.uuid_param(request, "id", "organization")
    access.check_visible(c.principal(request), access.Resource.organization(org), "organization")
    return org


@answers(shapes.Created)
async def create_organization(request: Request) -> Response:
    wanted = await c.body(request, Named)
    org = await c.call(c.services(request).roving.create_organization, wanted.name, c.principal(request), c.now())
    await c.settle(request)
    return c.json(shapes.Created(id=str(org), name=wanted.name), status=201)


@answers(shapes.Organizations)
async def list_organizations(request: Request) -> Response:
    who, tenancy = c.principal(request), c.services(request).views.tenancy
    rows = await c.call(tenancy.organizations)
    known = names(request)
    return c.json(shapes.Organizations(organizations=[with_owner_names(r, known) for r in rows
                                                      if access.visible(who, access.Resource.organization(r.id))]))


def with_owner_names(row: OrganizationRow, known: Names) -> shapes.Organization:
    return organization_of(row, [known.user(u) or str(u) for u in row.owners])


@answers(shapes.Organization)
async def show_organization(request: Request) -> Response:
    row = await c.call(c.services(request).views.tenancy.organization, own_org(request))
    if row is None:
        raise NotFound("organization")
    return c.json(with_owner_names(row, names(request)))


@answers(shapes.Created)
async def create_user(request: Request) -> Response:
    wanted = await c.body(request, NewUser)
    uid = await c.call(c.services(request).roving.create_user, c.uuid_param(request, "id", "organization"),
                       wanted.username, wanted.email, wanted.password, wanted.role, c.principal(request), c.now())
    await c.settle(request)
    return c.json(shapes.Created(id=str(uid), username=wanted.username), status=201)


@answers(shapes.Users)
async def list_users(request: Request) -> Response:
    rows, known = await c.call(c.services(request).views.tenancy.users, own_org(request)), names(request)
    return c.json(shapes.Users(users=[with_group_names_of_user(r, known) for r in rows]))


def with_group_names_of_user(row: UserRow, known: Names) -> shapes.User:
    return user_of(row, [known.group(g) or str(g) for g in row.groups])


@answers(shapes.Created)
async def create_group(request: Request) -> Response:
    wanted = await c.body(request, Named)
    gid = await c.call(method(request, "create_group"), c.uuid_param(request, "id", "organization"), wanted.name,
                       c.principal(request), c.now())
    await c.settle(request)
    return c.json(shapes.Created(id=str(gid), name=wanted.name), status=201)


@answers(shapes.Groups)
async def list_groups(request: Request) -> Response:
    rows, known = await c.call(c.services(request).views.tenancy.groups, own_org(request)), names(request)
    return c.json(shapes.Groups(groups=[with_group_names(r, known) for r in rows]))


def with_group_names(row: GroupRow, known: Names) -> shapes.Group:
    """Its preempt list's and its members' names beside their ids (an id the caller may not name stays one)."""
    return group_of(row, [known.group(g) or str(g) for g in row.preempt],
                    {known.user(u) or u: role for u, role in row.members.items()})


@answers(shapes.Group)
async def show_group(request: Request) -> Response:
    row = await c.call(c.services(request).views.tenancy.group, c.uuid_param(request, "id", "group"))
    if row is None:
        raise NotFound("group")
    access.check_visible(c.principal(request), access.Resource.group(row.organization_id, row.id), "group")
    return c.json(with_group_names(row, names(request)))


@answers(shapes.User)
async def show_user(request: Request) -> Response:
    """One account as its organization sees it (its uid and groups; never its password hash)."""
    who = c.principal(request)
    row = await c.call(c.services(request).views.tenancy.user, c.uuid_param(request, "id", "user"))
    if row is None or (row.organization_id is None and not who.is_cluster_admin):
        raise NotFound("user")
    if row.organization_id is not None:
        access.check_visible(who, access.Resource.organization(row.organization_id), "user")
    known = names(request)
    return c.json(with_group_names_of_user(row, known))


def posix_id_route(kind: str, what: str, body: type[Uid] | type[Gid]):
    """PUT a user's uid or a group's gid (cluster admins; unique; 0 only when the cluster allows root jobs; "auto":
    the next free one of the configured range, for accounts made before ids existed)."""
    field = "uid" if body is Uid else "gid"

    @answers(shapes.PosixId)
    async def set_posix_id(request: Request) -> Response:
        wanted = await c.body(request, body)
        target = c.uuid_param(request, "id", what)
        asked = getattr(wanted, field)
        number = await c.call(method(request, "set_posix_id"), kind, target, None if asked == "auto" else asked,
                              c.principal(request), c.now())
        await c.settle(request)
        return c.json(shapes.PosixId(id=str(target), **{field: number}))
    return set_posix_id


def priority_route(kind: str, what: str):
    @answers(shapes.PriorityChanged)
    async def set_priority(request: Request) -> Response:
        wanted = await c.body(request, Priority)
        target = c.uuid_param(request, "id", what)
        await c.call(c.services(request).roving.set_priority, kind, target, wanted.priority, c.principal(request),
                     c.now())
        await c.settle(request)
        return c.json(shapes.PriorityChanged(id=str(target), priority=wanted.priority))
    return set_priority


@answers(shapes.PreemptList)
async def set_preempt(request: Request) -> Response:
    wanted = await c.body(request, PreemptList)
    group = c.uuid_param(request, "id", "group")
    await c.call(method(request, "set_preempt_list"), group, wanted.groups, c.principal(request), c.now())
    await c.settle(request)
    return c.json(shapes.PreemptList(id=str(group), preempt=[str(g) for g in wanted.groups]))


@answers(shapes.Membership)
async def add_member(request: Request) -> Response:
    wanted = await c.body(request, Membership)
    group, user = c.uuid_param(request, "id", "group"), c.uuid_param(request, "user", "user")
    await c.call(method(request, "add_member"), group, user, wanted.role, c.principal(request), c.now())
    await c.settle(request)
    return c.json(shapes.Membership(group=str(group), user=str(user), role=wanted.role))


@answers(shapes.Membership)
async def remove_member(request: Request) -> Response:
    group, user = c.uuid_param(request, "id", "group"), c.uuid_param(request, "user", "user")
    await c.call(method(request, "remove_member"), group, user, c.principal(request), c.now())
    await c.settle(request)
    return c.json(shapes.Membership(group=str(group), user=str(user), removed=True))


def explainer_route(granted: bool):
    """PUT grants `explain_allocation` on the group to the user, DELETE revokes it (organization owners)."""
    @answers(shapes.Membership)
    async def set_explainer(request: Request) -> Response:
        group, user = c.uuid_param(request, "id", "group"), c.uuid_param(request, "user", "user")
        await c.call(method(request, "set_explainer"), group, user, granted, c.principal(request), c.now())
        await c.settle(request)
        return c.json(shapes.Membership(group=str(group), user=str(user), explain_allocation=granted))
    return set_explainer


@answers(shapes.Unlocked)
async def unlock_user(request: Request) -> Response:
    """Lift a login lock before it runs out (cluster admins and the owners of the user's organization)."""
    user = c.uuid_param(request, "id", "user")
    await c.call(c.services(request).roving.tenancy.unlock_user, user, c.principal(request), c.now())
    await c.settle(request)
    return c.json(shapes.Unlocked(id=str(user), unlocked=True))


routes = [
    Route("/v4/organizations", create_organization, methods=["POST"]),
    Route("/v4/organizations", list_organizations, methods=["GET"]),
    Route("/v4/organizations/{id}", show_organization, methods=["GET"]),
    Route("/v4/organizations/{id}/users", create_user, methods=["POST"]),
    Route("/v4/organizations/{id}/users", list_users, methods=["GET"]),
    Route("/v4/organizations/{id}/groups", create_group, methods=["POST"]),
    Route("/v4/organizations/{id}/groups", list_groups, methods=["GET"]),
    Route("/v4/organizations/{id}/priority", priority_route("organization", "organization"), methods=["PUT"]),
    Route("/v4/groups/{id}", show_group, methods=["GET"]),
    Route("/v4/groups/{id}/priority", priority_route("group", "group"), methods=["PUT"]),
    Route("/v4/groups/{id}/preempt", set_preempt, methods=["PUT"]),
    Route("/v4/groups/{id}/gid", posix_id_route("group", "group", Gid), methods=["PUT"]),
    Route("/v4/groups/{id}/members/{user}", add_member, methods=["PUT"]),
    Route("/v4/groups/{id}/members/{user}", remove_member, methods=["DELETE"]),
    Route("/v4/groups/{id}/explainers/{user}", explainer_route(True), methods=["PUT"]),
    Route("/v4/groups/{id}/explainers/{user}", explainer_route(False), methods=["DELETE"]),
    Route("/v4/users/{id}/unlock", unlock_user, methods=["POST"]),
    Route("/v4/users/{id}/priority", priority_route("user", "user"), methods=["PUT"]),
    Route("/v4/users/{id}", show_user, methods=["GET"]),
    Route("/v4/users/{id}/uid", posix_id_route("user", "user", Uid), methods=["PUT"]),
]

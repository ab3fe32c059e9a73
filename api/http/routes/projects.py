"""Project routes: the project tree with quotas, use, members and grants; a group's default project; the shared
resources; and the admin-deployed presets (read-only).

`PUT /v4/projects/{path}` makes a project or changes it: `{"quota": {"cpu": 8, "memory": "64GiB", "devices": {"gpu":
2}}, "members": ["alice"]}`; what the body names replaces what the project had, what it leaves out stays. With
`If-None-Match: *` an existing project is a conflict (409). `PATCH` adds and removes members and grants permissions
on the project's subtree. Cluster admins see every project; others see those they belong to and those a
`project:view` grant covers, with members of their own organization only and no grants.
"""

from __future__ import annotations

from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from adapters.presets import load_presets
from api.http.answers.more import GroupProjectSet, Preset, Presets, Project, Projects, SharedResources
from api.http.routes import common as c
from domain.app import access
from domain.app.errors import NotFound
from domain.presets import Preset as DomainPreset
from domain.presets import PresetError, check_name


class ProjectBody(msgspec.Struct, forbid_unknown_fields=True):
    quota: dict[str, Any] | None = None
    members: list[str] | None = None


class ProjectChange(msgspec.Struct, forbid_unknown_fields=True):
    add_members: list[str] = []
    remove_members: list[str] = []
    grant: dict[str, list[str]] = {}  # username -> permissions, on the project's whole subtree
    revoke: dict[str, list[str]] = {}


class GroupProject(msgspec.Struct, forbid_unknown_fields=True):
    project: str  # "" for none: the cluster's default (projects.default) applies


def path_of(request: Request) -> str:
    return str(request.path_params["path"]).strip("/")


def shown(request: Request, row: Any) -> dict[str, Any]:
    """A project row as the caller may see it: members of other organizations and the grants stay an admin's."""
    who, tenancy = c.principal(request), c.services(request).views.tenancy
    found = msgspec.to_builtins(row)
    if who.is_cluster_admin:
        return found
    mine = {str(u.username).lower() for u in tenancy.users(who.organization_id)} if who.organization_id else set()
    found["members"] = [m for m in row.members if m.lower() in mine]
    found.pop("grants", None)
    return found


def visible(request: Request, row: Any) -> bool:
    return access.sees_project(c.principal(request), row.path, row.members)


async def list_projects(request: Request) -> Response:
    rows = await c.call(c.services(request).views.projects.rows)
    return c.json(Projects(projects=[shown(request, r) for r in rows if visible(request, r)]))


async def show_project(request: Request) -> Response:
    row = await c.call(c.services(request).views.projects.row, path_of(request))
    if row is None or not visible(request, row):
        raise NotFound(f"project {path_of(request)}")
    return c.json(shown(request, row))


async def put_project(request: Request) -> Response:
    wanted, path = await c.body(request, ProjectBody), path_of(request)
    create_only = request.headers.get("if-none-match", "").strip() == "*"
    made = await c.call(c.services(request).roving.put_project, path, wanted.quota, wanted.members,
                        c.principal(request), c.now(), create_only)
    await c.settle(request)
    row = await c.call(c.services(request).views.projects.row, path)
    return c.json(shown(request, row) if row is not None else Project(path=path), status=201 if made else 200)


async def change_project(request: Request) -> Response:
    wanted, path = await c.body(request, ProjectChange), path_of(request)
    await c.call(c.services(request).roving.change_project, path, c.principal(request), c.now(),
                 wanted.add_members, wanted.remove_members, wanted.grant, wanted.revoke)
    await c.settle(request)
    row = await c.call(c.services(request).views.projects.row, path)
    return c.json(shown(request, row) if row is not None else Project(path=path))


async def delete_project(request: Request) -> Response:
    await c.call(c.services(request).roving.delete_project, path_of(request), c.principal(request), c.now())
    await c.settle(request)
    return Response(status_code=204)


async def set_group_project(request: Request) -> Response:
    wanted, group = await c.body(request, GroupProject), c.uuid_param(request, "id", "group")
    await c.call(c.services(request).roving.set_group_project, group, wanted.project, c.principal(request), c.now())
    await c.settle(request)
    return c.json(GroupProjectSet(group=str(group), default_project=wanted.project))


async def shared_resources(request: Request) -> Response:
    rows = await c.call(c.services(request).views.projects.shared)
    return c.json(SharedResources(shared_resources=rows))


async def list_presets(request: Request) -> Response:
    """Every user may read them (they hold options, never secrets); a file that is no preset is named to admins."""
    access.profile_reader(c.principal(request))
    found, broken = await c.call(load_presets, c.settings(request).presets)
    shown_broken = broken if c.principal(request).is_cluster_admin else {}
    return c.json(Presets(presets=[preset_of(p) for p in found], broken=shown_broken))


async def show_preset(request: Request) -> Response:
    access.profile_reader(c.principal(request))
    name = request.path_params["name"]
    try:
        check_name(name)
    except PresetError:
        raise NotFound(f"preset {name}") from None
    found, _ = await c.call(load_presets, c.settings(request).presets)
    preset = next((p for p in found if p.name == name), None)
    if preset is None:
        raise NotFound(f"preset {name}")
    return c.json(preset_of(preset))


def preset_of(preset: DomainPreset) -> Preset:
    """A preset as its YAML document has it, then its name and digest."""
    return Preset(description=preset.description, options=dict(preset.options), name=preset.name, digest=preset.digest)


routes = [
    Route("/v4/projects", list_projects, methods=["GET"]),
    Route("/v4/projects/{path:path}", show_project, methods=["GET"]),
    Route("/v4/projects/{path:path}", put_project, methods=["PUT"]),
    Route("/v4/projects/{path:path}", change_project, methods=["PATCH"]),
    Route("/v4/projects/{path:path}", delete_project, methods=["DELETE"]),
    Route("/v4/groups/{id}/project", set_group_project, methods=["PUT"]),
    Route("/v4/scheduler/shared-resources", shared_resources, methods=["GET"]),
    Route("/v4/presets", list_presets, methods=["GET"]),
    Route("/v4/presets/{name}", show_preset, methods=["GET"]),
]

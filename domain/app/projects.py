"""Project handlers: make and change projects (cluster admins), a group's default project, and at submission the
project work runs under and the check that refuses what could never run under its quotas or shared resources.

Which project: the workflow's own `project:` (or `--project`), else its group's default, else the cluster's
(`projects.default`). Until a first project exists the cluster is in open mode and work needs none; after, work
that resolves to no project is refused, naming the projects its submitter belongs to. Submitting needs membership of
that very project (cluster admins may submit anywhere).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from domain.app import access
from domain.app.config import ConfigHandlers
from domain.app.errors import Conflict, Forbidden, Invalid, NotFound, invalid
from domain.app.unit_of_work import UnitOfWork, command
from domain.fuzzfile import Problem
from domain.fuzzfile.schema import Workflow as Fuzzfile
from domain.ids import project_id, user_id
from domain.project import Project, ProjectError, ancestors, check_path, parent_of, parse_quota
from domain.scheduler.quotas import charge, figure, largest_job
from domain.scheduler.snapshot import Definition, NodeView, QueuedAllocation
from domain.tenancy import Group, TenancyError
from domain.tenancy.permissions import Action, Principal, Resource
from domain.tenancy.user import User
from domain.workflow import Workflow


class ProjectHandlers:
    def __init__(self, uow: UnitOfWork, config: ConfigHandlers, read_models: Any) -> None:
        self.uow, self.config, self.read_models = uow, config, read_models

    @command
    def put_project(self, path: str, quota: dict[str, Any] | None, members: list[str] | None, principal: Principal,
                    at: datetime, create_only: bool = False) -> bool:
        """Make the project or change it: the quota and the members the body names replace what it had; what it
        leaves out stays. Returns True when it was made. `create_only`: an existing project is a conflict."""
        access.project_admin(principal)
        with _project_errors():
            path = check_path(path)
            limits = parse_quota(quota) if quota is not None else None
        self._check_users(members or [], "members")
        project, created = self._made(path, principal.username, at, create_only)
        with _project_errors():
            if limits is not None:
                project.set_quota(limits, by=principal.username, at=at)
            if members is not None:
                project.set_members(members, by=principal.username, at=at)
        self.uow.save(project)
        return created

    @command
    def change_project(self, path: str, principal: Principal, at: datetime, add: Sequence[str] = (),
                       remove: Sequence[str] = (), grant: dict[str, list[str]] | None = None,
                       revoke: dict[str, list[str]] | None = None) -> None:
        """Members added and removed, permissions granted and revoked (on the project's whole subtree)."""
        access.project_admin(principal)
        project = self._existing(path)
        self._check_users(add, "add_members")
        self._check_users(list(grant or {}), "grant")
        with _project_errors():
            project.change_members(add, remove, by=principal.username, at=at)
            for username, permissions in (grant or {}).items():
                project.grant(username, permissions, by=principal.username, at=at)
            for username, permissions in (revoke or {}).items():
                project.revoke(username, permissions, by=principal.username, at=at)
        self.uow.save(project)

    @command
    def delete_project(self, path: str, principal: Principal, at: datetime) -> None:
        """A project with children is refused, naming them; its waiting work is held (PROJECT_HELD)."""
        access.project_admin(principal)
        project = self._existing(path)
        children = [p for p in self._paths() or [] if parent_of(p) == project.path]
        if children:
            raise Conflict(f"project {project.path} has child projects ({', '.join(children)}); delete them first")
        project.delete(by=principal.username, at=at)
        self.uow.save(project)

    @command
    def set_group_project(self, group: UUID, path: str, principal: Principal, at: datetime) -> None:
        """A group's default project ("" for none: the cluster's default applies)."""
        found = self.uow.load(Group, group, "group")
        access.decide(principal, Action.SET_GROUP_PRIORITY, Resource.group(found.organization_id, group), "group")
        if path:
            path = self._existing(path).path
        try:
            changed = found.set_default_project(path, by=principal.username, by_role=principal.role, at=at)
        except TenancyError as error:
            raise Forbidden(error.reason) from error
        if changed:
            self.uow.save(found)

    def resolve(self, definition: Fuzzfile, owner: dict[str, str], principal: Principal) -> str:
        """The project path the submission runs under ("" in open mode), or why it may not run under one."""
        named, whose = (definition.project, "") if definition.project else self._default(owner)
        if not named:
            if self._defined():
                mine = ", ".join(self._member_of(principal.username)) or "none; ask an admin to add you to one"
                raise invalid("project", "this cluster counts work toward projects: name one with `project:` or "
                                         f"--project (your projects: {mine})")
            return ""
        project = self._live(named)
        if project is None:
            raise invalid("project", f"no project named {named}{whose}")
        if not principal.is_cluster_admin and not project.is_member(principal.username):
            mine = ", ".join(self._member_of(principal.username)) or "none"
            raise Forbidden(f"you are not a member of project {project.path}{whose} (your projects: {mine})")
        return project.path

    def check_fits(self, workflow: Workflow, definitions: Sequence[Definition] | None) -> None:
        """Refuse steps that could never run: past a quota of their project (or an ancestor), naming the project, or
        asking for more of a shared resource than the cluster has."""
        problems = self.problems(workflow.step_specs(), str(workflow.owner.get("project") or ""), definitions)
        if problems:
            raise Invalid(problems)

    def problems(self, specs: Sequence[Any], project: str, definitions: Sequence[Definition] | None) -> list[Problem]:
        chain = [p for p in (self._live(path) for path in ancestors(project)) if p is not None]
        totals = self.config.scheduler_config().shared_resources
        problems: list[Problem] = []
        room = largest_job(specs)
        for spec in specs:
            where = f"{'services' if spec.kind == 'service' else 'jobs'}.{spec.step}.resource"
            if spec.build is not None:
                where = f"images.{spec.build.name}"
            amounts = charge(*_request(spec, definitions or ()))
            # a service holds its quota until its jobs end: one that leaves no room for them could never run
            problems += _quota_problems(where, amounts, chain, room if spec.kind == "service" else None)
            problems += _shared_problems(where, spec.resources.shared, totals)
        return list({(p.path, p.message): p for p in problems}.values())

    def _default(self, owner: dict[str, str]) -> tuple[str, str]:
        group = owner.get("group_id") or ""
        found = self.uow.repository.get(UUID(group)) if group and UUID(group) in self.uow.repository else None
        if isinstance(found, Group) and found.default_project:
            return found.default_project, f" (the default project of group {found.name})"
        default = self.config.scheduler_config().default_project
        return default, " (the cluster's default project, projects.default)" if default else ""

    def _made(self, path: str, by: str, at: datetime, create_only: bool) -> tuple[Project, bool]:
        parent = parent_of(path)
        if parent and self._live(parent) is None:
            raise invalid("path", f"project {parent} does not exist; make it first (projects nest by path)")
        pid = project_id(path)
        if pid not in self.uow.repository:
            return Project.create(path, by=by, at=at), True
        project: Project = self.uow.repository.get(pid)
        if not project.deleted:
            if create_only:
                raise Conflict(f"project {path} already exists")
            return project, False
        project.restore(by=by, at=at)
        return project, True

    def _existing(self, path: str) -> Project:
        with _project_errors():
            path = check_path(path)
        found = self._live(path)
        if found is None:
            raise NotFound(f"project {path}")
        return found

    def _live(self, path: str) -> Project | None:
        pid = project_id(path)
        found = self.uow.repository.get(pid) if pid in self.uow.repository else None
        return found if isinstance(found, Project) and not found.deleted else None

    def _check_users(self, usernames: Sequence[str], field: str) -> None:
        for index, name in enumerate(usernames):
            uid = user_id(name) if isinstance(name, str) and name else None
            if uid is None or uid not in self.uow.repository or not isinstance(self.uow.repository.get(uid), User):
                raise invalid(f"{field}[{index}]", f"no user named {name!r}")

    def _defined(self) -> bool:
        paths = self._paths()
        return bool(paths)

    def _paths(self) -> list[str] | None:
        found = getattr(self.read_models, "project_paths", None)
        return found() if found is not None else None

    def _member_of(self, username: str) -> list[str]:
        found = getattr(self.read_models, "member_projects", None)
        return list(found(username)) if found is not None else []


def _request(spec: Any, definitions: Sequence[Definition]) -> tuple[QueuedAllocation, list[NodeView]]:
    """The step's request, and for exclusive work the smallest node shape any definition offers that holds it
    (exclusive work is charged whole nodes): its least effective charge."""
    r = spec.resources
    request = QueuedAllocation(id=spec.name, workflow_id="", stage=spec.name, submitted_at=datetime.min,
                               cpu=r.cpu_cores, memory=r.memory_bytes, devices=dict(r.devices),
                               exclusive=r.exclusive, nodes=r.nodes)
    if not r.exclusive:
        return request, []
    shapes = [d.shape for d in definitions if d.shape.cpu >= r.cpu_cores and d.shape.memory >= r.memory_bytes
              and all(d.shape.devices.get(k, 0) >= v for k, v in r.devices.items())]
    if not shapes:
        return request, []
    shape = min(shapes, key=lambda s: (s.cpu, s.memory))
    node = NodeView(id="", cpu=shape.cpu, memory=shape.memory, devices=dict(shape.devices))
    return request, [node] * r.nodes


def _quota_problems(where: str, amounts: dict[str, int], chain: list[Project],
                    room: dict[str, int] | None = None) -> list[Problem]:
    """`room`: for a service, what its workflow's largest job asks, which must fit beside it."""
    for project in chain:
        for key, limit in sorted(project.quota.items()):
            asked, kept = amounts.get(key, 0), (room or {}).get(key, 0)
            if asked and asked + kept > limit:
                beside = f" and its workflow's largest job {figure(key, kept)} beside it" if kept else ""
                return [Problem(path=where, message=f"can never run under project {project.path}'s quota: it asks "
                                                    f"{key} {figure(key, asked)}{beside}, the quota is "
                                                    f"{figure(key, limit)}")]
    return []


def _shared_problems(where: str, shared: dict[str, int], totals: dict[str, int]) -> list[Problem]:
    problems = []
    for name, count in sorted(shared.items()):
        total = totals.get(name)
        if total is None:
            offered = ", ".join(sorted(totals)) or "none (scheduler.sharedResources is empty)"
            problems.append(Problem(path=f"{where}.shared.{name}",
                                    message=f"this cluster has no shared resource {name} (it has: {offered})"))
        elif count > total:
            problems.append(Problem(path=f"{where}.shared.{name}",
                                    message=f"asks {count} of shared resource {name}; the cluster has {total}"))
    return problems


class _project_errors:
    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, error: Any, tb: Any) -> None:
        if isinstance(error, ProjectError):
            raise Invalid([Problem(path=error.field, message=error.reason)]) from error

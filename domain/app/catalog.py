"""Catalog handlers: add and remove catalog sources, list and search the templates a caller may see, show one,
render it with their values and start it as a workflow.

Who may do what: a group's sources are added and removed by its owners, an organization's by its owners, the
cluster's by cluster admins; a source that reads the control plane's own disk (a folder, a file:// repository) is
added by a cluster admin only, for any owner. Reading follows membership: a group's members, an organization's
members, everyone for the cluster's. A source the caller may not see is answered as one that does not exist. The
templates themselves are read through the `CatalogStore` port (an adapter does the I/O); a source that cannot be
read is reported beside the others' templates, never as the whole catalog failing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, Protocol
from uuid import UUID

from domain.app.catalog_access import Owner, may_manage, may_see, owner_for, shown_location
from domain.app.errors import Conflict, Forbidden, Invalid, NotFound, invalid
from domain.app.roving import Roving
from domain.app.unit_of_work import command
from domain.catalog import Budget, CatalogError, Clock, Template, TemplateFiles, build, matches, render_fuzzfile
from domain.catalog.source import (
    CatalogSource,
    SourceKind,
    SourceScope,
    allowed_remote,
    check_source,
    is_local,
    source_id,
)
from domain.tenancy import Source
from domain.tenancy.permissions import Principal

NOT_USABLE = ("cannot add this source: a git source is a repository, with its ref, at a scheme and host the "
              "cluster's catalog.allowedSources lists (ask a cluster admin)")


class SourceUnreadable(Exception):
    """A source whose templates cannot be read now (the folder is gone, the repository does not answer)."""


class CatalogStore(Protocol):
    def templates(self, source: CatalogSource) -> list[TemplateFiles]:
        """Every template's files in the source; SourceUnreadable saying why not."""
        ...

    def check(self, kind: SourceKind, location: str, ref: str) -> None:
        """SourceUnreadable unless a source there could be read."""
        ...

    def refresh(self, source: CatalogSource, tell: Callable[[str], None] | None = None) -> None:
        """Read the source anew now (a git source fetched whatever its checkout's age), its progress lines told;
        SourceUnreadable saying why not."""
        ...


class CatalogHandlers:
    def __init__(self, uow: Roving, store: CatalogStore, listed: Callable[[], Iterable[CatalogSource]],
                 rand_int: Callable[[int, int], int]) -> None:
        self.uow, self.store, self.listed, self.rand_int = uow, store, listed, rand_int

    @command
    def add_source(self, name: str, kind: str, location: str, ref: str, scope: str, owner: str,
                   principal: Principal, at: datetime) -> dict[str, Any]:
        wanted = _scope(scope)
        with catalog_errors():
            found_kind = check_source(name, kind, location, ref)
        where = owner_for(self.uow, wanted, owner, principal)
        if not may_manage(principal, wanted, where):
            raise Forbidden(f"{wanted.value} catalog sources are added by the {where.managers}")
        if is_local(found_kind, location) and not principal.is_cluster_admin:
            raise Forbidden("a folder or file:// source reads the control plane's own disk: a cluster admin adds it")
        self._check_reachable(found_kind, location, ref, principal)
        existing = self._get(source_id(wanted, where.id, name))
        with catalog_errors():
            if existing is None:
                existing = CatalogSource.add(name, found_kind, location, ref, wanted, where.id, where.name,
                                             where.organization_id, by=principal.username, at=at)
            else:
                existing.add_again(found_kind, location, ref, by=principal.username, at=at)
        self.uow.save(existing)
        return source_answer(existing)

    def _check_reachable(self, kind: SourceKind, location: str, ref: str, principal: Principal) -> None:
        """A cluster admin's source is read as given, and a failure says why. Anyone else's git source must be at a
        scheme and host `catalog.allowedSources` lists, and any refusal is one sentence, the same whether the host
        is not allowed, does not answer or has no such ref: the control plane fetching for a tenant must not become
        a way to learn what it can reach."""
        if principal.is_cluster_admin:
            try:
                self.store.check(kind, location, ref)
            except SourceUnreadable as why:
                raise invalid("location", f"cannot read the source: {why}") from None
            return
        allowed = self.uow.scheduler_config().catalog_allowed_sources
        try:
            if not allowed_remote(location, allowed):
                raise SourceUnreadable("not allowed")
            self.store.check(kind, location, ref)
        except SourceUnreadable:
            raise invalid("location", NOT_USABLE) from None

    @command
    def remove_source(self, source: UUID, principal: Principal, at: datetime) -> dict[str, Any]:
        found = self._visible(source, principal)
        if not may_manage(principal, found.scope, Owner(found.owner_id, found.owner_name, found.organization_id)):
            raise Forbidden(f"only the source's managers remove a {found.scope.value} catalog source")
        found.remove(by=principal.username, at=at)
        self.uow.save(found)
        return {"id": found.id, "name": found.name, "removed": True}

    def refresh_source(self, source: UUID, principal: Principal,
                       tell: Callable[[str], None] | None = None) -> dict[str, Any]:
        """A source read anew now rather than at its refresh time (its managers pushed templates): its templates
        and problems, or why it could not be read; `tell` hears git's progress as it fetches. Its managers only:
        anyone who may read it would otherwise make the control plane fetch a repository as often as they ask."""
        found = self.refreshable(source, principal)
        try:
            self.store.refresh(found, tell)
        except SourceUnreadable as why:  # its last checkout, if any, still serves: reading it would fetch again
            return {**unread(found), "error": str(why)}
        return self._read(found)[1]

    def refreshable(self, source: UUID, principal: Principal) -> CatalogSource:
        """The source, if the caller manages it (NotFound when they may not see it, Forbidden when only see it)."""
        found = self._visible(source, principal)
        if not may_manage(principal, found.scope, Owner(found.owner_id, found.owner_name, found.organization_id)):
            raise Forbidden(f"only the source's managers refresh a {found.scope.value} catalog source; it is "
                            "fetched again by itself once its checkout is older than the refresh time")
        return found

    def sources(self, principal: Principal) -> list[dict[str, Any]]:
        return [source_answer(s) for s in self._sources(principal)]

    def catalog(self, principal: Principal, query: str = "", category: str = "") -> dict[str, Any]:
        """Every template the caller may see that matches; each source's status (and why one could not be read)."""
        templates, statuses = self._templates(principal)
        shown = [t for t in templates if matches(t, query) and (not category or t.category == category
                                                                or any(i.display_category == category
                                                                       for i in t.inputs))]
        return {"templates": shown, "sources": statuses}

    def template(self, principal: Principal, name: str, source: str = "") -> Template:
        """One template by name (SOURCE/NAME, or `source`, when several sources have it)."""
        if "/" in name and not source:
            source, name = name.split("/", 1)
        templates, statuses = self._templates(principal)
        found = [t for t in templates if t.name == name and (not source or t.source == source)]
        if len(found) == 1:
            return found[0]
        if found:
            raise Conflict(f"name: {name!r} is in several sources ({', '.join(t.key for t in found)}); "
                           "name it as SOURCE/NAME")
        unread = [s["name"] for s in statuses if s["error"] and (not source or s["name"] == source)]
        hint = f" (sources not readable now: {', '.join(unread)})" if unread else ""
        raise NotFound(f"catalog template {source + '/' if source else ''}{name}{hint}")

    def render(self, principal: Principal, name: str, values: dict[str, Any], at: datetime,
               source: str = "", budget: Budget | None = None) -> dict[str, Any]:
        """The Fuzzfile; `budget` carries the caller's deadline (the domain has no clock: the step budget applies
        without one)."""
        template = self.template(principal, name, source)
        with catalog_errors():
            rendered = render_fuzzfile(template, values, Clock(at, self._rand), budget)
        return {"template": template.key, "fuzzfile": rendered.fuzzfile,
                "warnings": [{"path": w.path, "message": w.message} for w in rendered.warnings]}

    def start(self, principal: Principal, name: str, values: dict[str, Any], workflow_id: UUID, at: datetime,
              workflow_name: str = "", source: str = "", budget: Budget | None = None) -> dict[str, Any]:
        """Render, then submit the Fuzzfile as the caller (the submission's own checks and warnings apply)."""
        rendered = self.render(principal, name, values, at, source, budget)
        title = workflow_name or rendered["template"].split("/", 1)[1]
        submitted = self.uow.submit_workflow(workflow_id, title, rendered["fuzzfile"], 0, None, principal, at)
        notes = rendered["warnings"] + [{"path": w.path, "message": w.message} for w in submitted or []]
        notes = [dict(pair) for pair in dict.fromkeys(tuple(n.items()) for n in notes)]  # each warning once
        return {"id": workflow_id, "name": title, "template": rendered["template"], "warnings": notes}

    def _rand(self, low: int, high: int) -> int:
        return low if high <= low else self.rand_int(low, high)

    def _templates(self, principal: Principal) -> tuple[list[Template], list[dict[str, Any]]]:
        templates, statuses = [], []
        for source in self._sources(principal):
            read, status = self._read(source)
            templates += read
            statuses.append(status)
        return sorted(templates, key=lambda t: (t.name, t.source)), statuses

    def _read(self, source: CatalogSource) -> tuple[list[Template], dict[str, Any]]:
        """The source's templates and its status: how many, the problems of those that could not be read, or why
        the source itself could not be."""
        templates: list[Template] = []
        status = unread(source)
        try:
            files = self.store.templates(source)
        except SourceUnreadable as why:
            status["error"] = str(why)
            files = []
        for found in files:
            try:
                templates.append(built(found, source.name, str(source.id), source.scope.value))
                status["templates"] += 1
            except CatalogError as error:
                status["problems"] += [{"path": p.path, "message": p.message} for p in error.problems]
        return templates, status

    def _sources(self, principal: Principal) -> list[CatalogSource]:
        person(principal)
        found = [s for s in self.listed() if not s.removed and may_see(principal, s)]
        rank = {SourceScope.GROUP: 0, SourceScope.ORGANIZATION: 1, SourceScope.CLUSTER: 2}
        return sorted(found, key=lambda s: (rank[s.scope], s.owner_name, s.name))

    def _visible(self, source: UUID, principal: Principal) -> CatalogSource:
        found = self._get(source)
        if found is None or found.removed or not may_see(principal, found):
            raise NotFound("catalog source")
        return found

    def _get(self, aggregate_id: UUID) -> CatalogSource | None:
        if aggregate_id not in self.uow.repository:
            return None
        found = self.uow.repository.get(aggregate_id)
        return found if isinstance(found, CatalogSource) else None


def unread(source: CatalogSource) -> dict[str, Any]:
    """A source's status before its files are read."""
    return {"name": source.name, "id": source.id, "scope": source.scope.value, "owner": source.owner_name,
            "templates": 0, "error": "", "problems": []}


@functools.lru_cache(maxsize=4096)
def built(files: TemplateFiles, source: str, source_id: str, scope: str) -> Template:
    """`build`, remembered by the files' content: a listing reads every source's files again (an edit shows at once)
    but parses only what changed (42 reference templates: about 100 ms parsed, a few ms remembered)."""
    return build(files, source, source_id, scope)


def person(principal: Principal) -> None:
    """The catalog is read and started from with a person's token; a component's (agent, webhook) never."""
    if principal.source is not Source.ADMIN and not principal.is_cluster_admin:
        raise Forbidden(f"the catalog is read with a user's token, not with the {principal.source.value} token")


def source_answer(source: CatalogSource) -> dict[str, Any]:
    return {"id": source.id, "name": source.name, "kind": source.kind.value, "location": shown_location(source.location),
            "ref": source.ref, "scope": source.scope.value, "owner": source.owner_name, "owner_id": source.owner_id,
            "added_by": source.added_by, "added_at": source.added_at}


def _scope(scope: str) -> SourceScope:
    try:
        return SourceScope(scope)
    except ValueError:
        raise invalid("scope", f"expected group, organization or cluster, got {scope!r}") from None


class catalog_errors:  # noqa: N801 - used as a `with` block, like contextlib's
    """CatalogError from the domain becomes Invalid at its fields (400 naming them)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        if isinstance(error, CatalogError):
            raise Invalid(error.problems) from None

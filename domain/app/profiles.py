"""Application profile handlers: cluster admins set and delete profiles, users read them, submission binds to
them, and a start checks the profile a stage was bound to still says the same."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from domain.app import access
from domain.app.errors import Conflict, Invalid, NotFound, invalid
from domain.app.unit_of_work import UnitOfWork, command
from domain.fuzzfile.schema import Workflow as Definition
from domain.fuzzfile.stages import Stage
from domain.profiles import (
    Profile,
    ProfileBody,
    ProfileCatalog,
    bind_profiles,
    catalog_id,
    name_problem,
    problems,
    profile_id,
)
from domain.tenancy.permissions import Principal


class ProfileMoved(Conflict):
    """The profile a stage was bound to changed or went since the scheduler decided: the start is refused, the
    stage stays in the queue (a later pass decides again), and it is never failed for it."""


class ProfileHandlers:
    def __init__(self, uow: UnitOfWork) -> None:
        self.uow = uow

    @command
    def set_profile(self, name: str, body: ProfileBody, principal: Principal, at: datetime) -> dict[str, Any]:
        access.profile_changer(principal)
        if (problem := name_problem(name)) is not None:
            raise invalid("name", problem)
        if found := problems(body):
            raise Invalid(found)
        profile = self._find(name) or Profile(name=name, by=principal.username, at=at)
        catalog = self._catalog() or ProfileCatalog(by=principal.username, at=at)
        if profile.set(body, by=principal.username, at=at):
            catalog.note(name, profile.revision)
            self.uow.save(profile, catalog)
        return answer(profile)

    @command
    def delete_profile(self, name: str, principal: Principal, at: datetime) -> dict[str, Any]:
        access.profile_changer(principal)
        profile = self._live(name)
        profile.delete(by=principal.username, at=at)
        catalog = self._catalog() or ProfileCatalog(by=principal.username, at=at)
        catalog.forget(name)
        self.uow.save(profile, catalog)
        return {"name": name, "deleted": True, "revision": profile.revision}

    def profile(self, name: str, principal: Principal) -> dict[str, Any]:
        access.profile_reader(principal)
        return answer(self._live(name))

    def list_profiles(self, principal: Principal) -> list[dict[str, Any]]:
        access.profile_reader(principal)
        catalog = self._catalog()
        found = [self._find(name) for name in sorted(catalog.names)] if catalog else []
        return [answer(p) for p in found if p is not None and not p.deleted]

    def bind(self, definition: Definition) -> Definition:
        """The definition with every named profile merged in; Invalid naming each key a step may not override."""
        bound, refused = bind_profiles(definition, self._current)
        if refused:
            raise Invalid(refused)
        return bound

    def check_current(self, stage: Stage) -> None:
        """ProfileMoved when the stage's profile is gone or says something else than when it was bound."""
        if not stage.profile:
            return
        profile = self._find(stage.profile)
        if profile is None or profile.deleted:
            raise ProfileMoved(f"profile `{stage.profile}` was deleted after {stage.name} was submitted; "
                               "it waits in the queue until the profile is set again as it was")
        if profile.digest != stage.profile_digest:
            raise ProfileMoved(f"profile `{stage.profile}` changed (revision {stage.profile_revision}, now "
                               f"{profile.revision}) after {stage.name} was submitted; it waits in the queue")

    def _current(self, name: str) -> tuple[ProfileBody, int, str] | None:
        profile = self._find(name)
        if profile is None or profile.deleted:
            return None
        return profile.values, profile.revision, profile.digest

    def _live(self, name: str) -> Profile:
        profile = self._find(name)
        if profile is None or profile.deleted:
            raise NotFound(f"profile {name}")
        return profile

    def _find(self, name: str) -> Profile | None:
        pid = profile_id(name)
        return self.uow.load(Profile, pid, "profile") if pid in self.uow.repository else None

    def _catalog(self) -> ProfileCatalog | None:
        cid = catalog_id()
        return self.uow.load(ProfileCatalog, cid, "profiles") if cid in self.uow.repository else None


def answer(profile: Profile) -> dict[str, Any]:
    """The profile as `GET /v4/profiles/{name}` shows it: every body field, its revision, who changed it when."""
    body = profile.values
    return {"name": profile.name, "revision": profile.revision, "env": body.env, "resource": body.resource,
            "annotations": body.annotations, "pre": body.pre, "post": body.post, "hook_timeout": body.hook_timeout,
            "changed_by": profile.changed_by, "changed_at": profile.changed_at}

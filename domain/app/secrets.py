"""Secret handlers: create, list and delete scoped secrets; check a submission's `secret://` references; put
their values into a job's env as the job is handed to its agent.

Who may do what: a person manages their own user secrets, a group's owners its group secrets, an
organization's owners its organization secrets, cluster admins the cluster's. Reading follows membership
(the owner, the group's members, the organization's members). Only people's tokens write; a component's
token (agent, monitoring, a workflow's own) never does. A secret the caller may not read is answered exactly
as one that does not exist, so no tenant learns what another keeps. Values leave only through `resolve_*`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import datetime
from typing import Any
from uuid import UUID

import msgspec

from domain.app.errors import Conflict, Forbidden, Invalid, NotFound, invalid
from domain.app.ids import group_id
from domain.app.unit_of_work import UnitOfWork, command
from domain.fuzzfile import Problem
from domain.secrets import (Cipher, CipherError, Reference, Scope, SecretError, SecretShelf, check_name, check_scope, check_value,
                            entry_id, parse_reference, referenced, shelf_id, uses)
from domain.tenancy import Role, Source
from domain.tenancy.group import Group
from domain.tenancy.permissions import Principal
from domain.tenancy.user import User
from domain.workflow import Workflow

UNREADABLE = "no such secret, or not one the workflow's owner may read"


class Unresolvable(Exception):
    """A reference that cannot be read when its job starts; says which reference and why, never a value."""

    def __init__(self, variable: str, reference: str, reason: str = UNREADABLE) -> None:
        super().__init__(f"{variable}={reference}: {reason}")
        self.variable, self.reference = variable, reference


class Reader(msgspec.Struct, frozen=True, kw_only=True):
    """Whose secrets a workflow may read: its owner's. `group_ids` None asks the groups themselves (run time)."""

    user_id: str
    organization_id: str
    workflow_group_id: str
    group_ids: frozenset[str] | None
    cluster_admin: bool

    @classmethod
    def of(cls, principal: Principal) -> Reader:
        groups = sorted(str(g) for g in principal.group_ids)
        return cls(user_id=str(principal.user_id or ""), organization_id=str(principal.organization_id or ""),
                   workflow_group_id=groups[0] if groups else "", group_ids=frozenset(groups),
                   cluster_admin=principal.is_cluster_admin)


class ShelfKey(msgspec.Struct, frozen=True):
    scope: Scope
    owner_id: str
    label: str = ""
    organization_id: str = ""

    @property
    def id(self) -> UUID:
        return shelf_id(self.scope, self.owner_id)


class SecretHandlers:
    def __init__(self, uow: UnitOfWork, cipher: Cipher | None = None) -> None:
        self.uow, self.cipher = uow, cipher

    @command
    def create_secret(self, name: str, value: str, scope: str, principal: Principal, at: datetime,
                      group: str = "") -> UUID:
        person(principal)
        with secret_errors():
            wanted, data = check_scope(scope), check_value(value)
            check_name(name)
        key = self._managed(wanted, group, principal)
        shelf = self._shelf(key.id) or SecretShelf.open(key.scope, key.owner_id, label=key.label,
                                                        organization_id=key.organization_id, by=principal.username, at=at)
        if name in shelf.entries:
            raise Conflict(f"name: a {wanted.value} secret named {name!r} already exists; delete it first")
        sealed = self._sealer().seal(data, context(shelf.id, name))
        created = shelf.store(name, sealed, by=principal.username, at=at)
        self.uow.save(shelf)
        return created

    def list_secrets(self, principal: Principal) -> list[dict[str, Any]]:
        """Names, scopes and who made them, for every secret the caller may read; never a value."""
        rows = []
        for shelf in self._readable(principal):
            for entry in shelf.entries.values():
                rows.append({"id": entry.id, "name": entry.name, "scope": shelf.scope.value,
                             "group": shelf.label if shelf.scope is Scope.GROUP else "",
                             "reference": reference_text(shelf, entry.name, principal),
                             "created_by": entry.created_by, "created_at": entry.created_at})
        return sorted(rows, key=lambda r: (r["scope"], r["group"], r["name"]))

    @command
    def delete_secret(self, secret: UUID, principal: Principal, at: datetime) -> None:
        person(principal)
        for shelf in self._readable(principal):
            if shelf.by_id(secret) is not None:
                if not self._manages(shelf, principal):
                    raise Forbidden(f"only the secret's owner may delete a {shelf.scope.value} secret")
                shelf.remove(secret, by=principal.username, at=at)
                self.uow.save(shelf)
                return
        raise NotFound("secret")

    def check_references(self, definition: Any, principal: Principal) -> None:
        """Invalid naming each env entry whose reference is malformed, missing or not the submitter's to read."""
        check_references(self.uow, definition, principal)

    def resolve_env(self, env: dict[str, str], owner: dict[str, str]) -> dict[str, str]:
        """The env with each reference replaced by its value, read as the workflow's owner; Unresolvable if not."""
        refs = referenced(env)
        if not refs:
            return env
        reader = self._owner_reader(owner)
        out = dict(env)
        for variable, text in refs.items():
            out[variable] = self._open(variable, text, reader)
        return out

    def resolve_assignments(self, answer: dict[str, list[dict]]) -> dict[str, list[dict]]:
        """An agent's assignments with values in place; a job whose reference is unreadable now fails with the
        reference named in its log instead of running without it."""
        if not any(referenced(spec.get("env") or {}) for spec in answer.get("start", [])):
            return answer
        return {**answer, "start": [self.resolve_spec(spec) for spec in answer["start"]]}

    def resolve_spec(self, spec: dict[str, Any]) -> dict[str, Any]:
        env = spec.get("env") or {}
        if not referenced(env):
            return spec
        try:
            workflow = self.uow.load(Workflow, UUID(str(spec["workflow_id"])), "workflow")
            return {**spec, "env": self.resolve_env(env, workflow.owner)}
        except Unresolvable as refused:
            return refused_spec(spec, str(refused))
        except (NotFound, ValueError, KeyError):
            return refused_spec(spec, "its workflow is unknown, so its secrets cannot be read")

    def _open(self, variable: str, text: str, reader: Reader) -> str:
        try:
            reference = parse_reference(text)
        except SecretError as error:
            raise Unresolvable(variable, text, error.reason) from None
        shelf = self._shelf_for(reference, reader)
        entry = shelf.entries.get(reference.name) if shelf is not None else None
        if shelf is None or entry is None:
            raise Unresolvable(variable, text)
        try:
            return self._sealer().open(entry.sealed, context(shelf.id, entry.name)).decode()
        except CipherError as error:
            raise Unresolvable(variable, text, f"it cannot be decrypted ({error})") from None

    def _shelf_for(self, reference: Reference, reader: Reader) -> SecretShelf | None:
        key = readable_key(reference, reader)
        if key is None or (key.scope is Scope.GROUP and not self._member(key.owner_id, reader)):
            return None
        return self._shelf(key.id)

    def _member(self, group: str, reader: Reader) -> bool:
        if reader.group_ids is not None:
            return group in reader.group_ids
        found = self._get(UUID(group))
        return isinstance(found, Group) and UUID(reader.user_id) in found.members

    def _owner_reader(self, owner: dict[str, str]) -> Reader:
        uid = owner.get("user_id", "")
        user = self._get(UUID(uid)) if uid else None
        admin = isinstance(user, User) and user.role is Role.CLUSTER_ADMIN
        return Reader(user_id=uid, organization_id=owner.get("organization_id", ""),
                      workflow_group_id=owner.get("group_id", ""), group_ids=None, cluster_admin=admin)

    def _managed(self, scope: Scope, group: str, principal: Principal) -> ShelfKey:
        """The shelf the caller asks to write to, if theirs to manage (Forbidden or Invalid naming why)."""
        org = str(principal.organization_id or "")
        if scope is Scope.USER:
            return ShelfKey(scope, str(principal.user_id), principal.username, org)
        if scope is Scope.ORGANIZATION:
            if not principal.owns_organization(principal.organization_id):
                raise Forbidden("organization secrets are managed by the organization's owners")
            return ShelfKey(scope, org, "", org)
        if scope is Scope.CLUSTER:
            if not principal.is_cluster_admin:
                raise Forbidden("cluster secrets are managed by cluster admins")
            return ShelfKey(scope, "", "", "")
        found = self._group(group, principal)
        if not self._owns_group(found, principal):
            raise Forbidden(f"group {found.name} secrets are managed by the group's owners")
        return ShelfKey(scope, str(found.id), found.name, str(found.organization_id))

    def _group(self, wanted: str, principal: Principal) -> Group:
        if not wanted:
            owned = sorted(principal.owned_group_ids)
            if len(owned) != 1:
                raise invalid("group", f"name the group (you own {len(owned)} groups)")
            wanted = str(owned[0])
        found = self._get(_as_uuid(wanted) or group_id(principal.organization_id or UUID(int=0), wanted))
        same_org = isinstance(found, Group) and (principal.is_cluster_admin
                                                 or found.organization_id == principal.organization_id)
        if not isinstance(found, Group) or not same_org:
            raise invalid("group", f"no group {wanted!r} in your organization")
        return found

    def _owns_group(self, group: Group, principal: Principal) -> bool:
        return (principal.is_cluster_admin or principal.owns_organization(group.organization_id)
                or (principal.user_id is not None and group.members.get(principal.user_id) is Role.GROUP_OWNER))

    def _manages(self, shelf: SecretShelf, principal: Principal) -> bool:
        if shelf.scope is Scope.USER:
            return shelf.owner_id == str(principal.user_id)
        if shelf.scope is Scope.ORGANIZATION:
            return principal.owns_organization(principal.organization_id)
        if shelf.scope is Scope.CLUSTER:
            return principal.is_cluster_admin
        found = self._get(UUID(shelf.owner_id))
        return isinstance(found, Group) and self._owns_group(found, principal)

    def _readable(self, principal: Principal) -> Iterator[SecretShelf]:
        for key in readable_keys(principal):
            shelf = self._shelf(key.id)
            if shelf is not None:
                yield shelf

    def _shelf(self, shelf: UUID) -> SecretShelf | None:
        found = self._get(shelf)
        return found if isinstance(found, SecretShelf) else None

    def _get(self, aggregate: UUID) -> Any:
        return self.uow.repository.get(aggregate) if aggregate in self.uow.repository else None

    def _sealer(self) -> Cipher:
        if self.cipher is None:
            raise Conflict("secrets are not available: this control plane has no secret key configured")
        return self.cipher


def check_references(uow: UnitOfWork, definition: Any, principal: Principal) -> None:
    """Every `secret://` env entry of a definition must be one the submitter may read; Invalid names the rest."""
    handlers, reader, problems = SecretHandlers(uow), Reader.of(principal), []
    for use in uses(definition):
        try:
            reference = parse_reference(use.text)
            found = handlers._shelf_for(reference, reader)
            if found is None or reference.name not in found.entries:
                problems.append(Problem(path=use.path, message=f"{use.text}: {UNREADABLE}"))
        except SecretError as error:
            problems.append(Problem(path=use.path, message=error.reason))
    if problems:
        raise Invalid(problems)


def readable_key(reference: Reference, reader: Reader) -> ShelfKey | None:
    if reference.scope is Scope.USER:
        return ShelfKey(Scope.USER, reader.user_id) if reader.user_id else None
    if reference.scope is Scope.ORGANIZATION:
        return ShelfKey(Scope.ORGANIZATION, reader.organization_id) if reader.organization_id else None
    if reference.scope is Scope.CLUSTER:
        return ShelfKey(Scope.CLUSTER, "") if reader.cluster_admin else None
    if not reference.group:
        return ShelfKey(Scope.GROUP, reader.workflow_group_id) if reader.workflow_group_id else None
    if not reader.organization_id:
        return None
    return ShelfKey(Scope.GROUP, str(group_id(UUID(reader.organization_id), reference.group)))


def readable_keys(principal: Principal) -> list[ShelfKey]:
    keys = [ShelfKey(Scope.USER, str(principal.user_id))] if principal.user_id else []
    keys += [ShelfKey(Scope.GROUP, str(g)) for g in sorted(principal.group_ids, key=str)]
    if principal.organization_id:
        keys.append(ShelfKey(Scope.ORGANIZATION, str(principal.organization_id)))
    if principal.is_cluster_admin:
        keys.append(ShelfKey(Scope.CLUSTER, ""))
    return keys


def reference_text(shelf: SecretShelf, name: str, principal: Principal) -> str:
    group = f"{shelf.label}/" if shelf.scope is Scope.GROUP else ""
    return f"secret://{shelf.scope.value}/{group}{name}"


def context(shelf: UUID, name: str) -> bytes:
    """What a ciphertext is bound to: one secret of one shelf (a ciphertext copied elsewhere does not open)."""
    return str(entry_id(shelf, name)).encode()


def person(principal: Principal) -> None:
    if principal.source is not Source.ADMIN or principal.user_id is None:
        raise Forbidden(f"secrets are written with a person's token, not with the {principal.source.value} token")


def refused_spec(spec: dict[str, Any], reason: str) -> dict[str, Any]:
    """The job, made to fail at once saying why (the reason names references, never values)."""
    message = "roving: " + reason.replace("'", "")
    env = {k: v for k, v in (spec.get("env") or {}).items() if not referenced({k: v})}
    return {**spec, "env": env, "command": None, "args": None, "files": {},
            "script": f"echo '{message}' >&2\nexit 78\n"}


def _as_uuid(text: str) -> UUID | None:
    try:
        return UUID(text)
    except ValueError:
        return None


@contextlib.contextmanager
def secret_errors() -> Iterator[None]:
    """SecretError from the rules becomes Invalid at its field (400 naming it)."""
    try:
        yield
    except SecretError as error:
        raise invalid(error.field, error.reason) from error

"""Secret handlers: create, list and delete scoped secrets, rotate the key they are sealed with, and (through
`SecretReading`) check a submission's `secret://` references and resolve them as a job is handed out.

Who may do what: a person manages their own user secrets, a group's owners its group secrets, an
organization's owners its organization secrets, cluster admins the cluster's. Reading follows membership
(the owner, the group's members, the organization's members). Only people's tokens write; a component's
token (agent, monitoring, a workflow's own) never does. A secret the caller may not read is answered exactly
as one that does not exist. Values leave only through `resolve_*`, to agents.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import datetime
from typing import Any
from uuid import UUID

import msgspec

from domain.app.errors import Conflict, Forbidden, NotFound, invalid
from domain.app.ids import group_id
from domain.app.secret_reading import SecretReading, context
from domain.app.unit_of_work import UnitOfWork, command
from domain.ids import as_uuid
from domain.secrets import (
    INDEX_ID,
    Cipher,
    Scope,
    SecretError,
    SecretIndex,
    SecretShelf,
    check_name,
    check_scope,
    check_value,
    shelf_id,
)
from domain.tenancy import Role, Source
from domain.tenancy.group import Group
from domain.tenancy.permissions import Principal


class ShelfKey(msgspec.Struct, frozen=True):
    scope: Scope
    owner_id: str
    label: str = ""
    organization_id: str = ""


class SecretHandlers(SecretReading):
    def __init__(self, uow: UnitOfWork, cipher: Cipher | None = None) -> None:
        super().__init__(uow, cipher)

    @command
    def create_secret(self, name: str, value: str, scope: str, principal: Principal, at: datetime,
                      group: str = "") -> UUID:
        person(principal)
        with secret_errors():
            wanted, data = check_scope(scope), check_value(value)
            check_name(name)
        key = self._managed(wanted, group, principal)
        shelf, index = self.shelf(shelf_id(key.scope, key.owner_id)), None
        if shelf is None:
            shelf = SecretShelf.open(key.scope, key.owner_id, label=key.label, organization_id=key.organization_id,
                                     by=principal.username, at=at)
            index = self.get(INDEX_ID) or SecretIndex.start(by=principal.username, at=at)
            index.add(shelf.id, by=principal.username, at=at)
        if name in shelf.entries:
            raise Conflict(f"name: a {wanted.value} secret named {name!r} already exists; delete it first")
        created = shelf.store(name, self._sealer().seal(data, context(shelf.id, name)), by=principal.username, at=at)
        self.uow.save(shelf, index)
        return created

    def list_secrets(self, principal: Principal) -> list[dict[str, Any]]:
        """Names, scopes and who made them, for every secret the caller may read; never a value."""
        rows = []
        for shelf in self._readable(principal):
            group = shelf.label if shelf.scope is Scope.GROUP else ""
            for entry in shelf.entries.values():
                reference = f"secret://{shelf.scope.value}/{group + '/' if group else ''}{entry.name}"
                rows.append({"id": entry.id, "name": entry.name, "scope": shelf.scope.value, "group": group,
                             "reference": reference, "created_by": entry.created_by, "created_at": entry.created_at})
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

    def rotate_key(self, principal: Principal, at: datetime) -> dict[str, Any]:
        """A new current key, then every secret resealed with it (old keys stay in the ring for the log's past)."""
        if not principal.is_cluster_admin or principal.source is not Source.ADMIN:
            raise Forbidden("rotating the secret key needs a cluster admin")
        key_id = self._sealer().rotate()
        return {"key_id": key_id, "resealed": self.reseal(principal, at)}

    @command
    def reseal(self, principal: Principal, at: datetime) -> int:
        """Seal again, with the current key, every secret another key sealed; returns how many."""
        index, touched, count = self.get(INDEX_ID), [], 0
        for shelf in filter(None, (self.shelf(s) for s in (index.shelves if index is not None else []))):
            if resealed := self._reseal_shelf(shelf, principal.username, at):
                touched.append(shelf)
                count += resealed
        self.uow.save(*touched)
        return count

    def _reseal_shelf(self, shelf: SecretShelf, by: str, at: datetime) -> int:
        cipher = self._sealer()
        stale = [e for e in shelf.entries.values() if e.sealed.key_id != cipher.current_key()]
        for entry in stale:
            where = context(shelf.id, entry.name)
            shelf.reseal(entry.name, cipher.seal(cipher.open(entry.sealed, where), where), by=by, at=at)
        return len(stale)

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
        found = self.get(as_uuid(wanted) or group_id(principal.organization_id or UUID(int=0), wanted))
        if not isinstance(found, Group) or not (principal.is_cluster_admin
                                                or found.organization_id == principal.organization_id):
            raise NotFound("group")  # another organization's group is answered as an unknown one
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
        found = self.get(UUID(shelf.owner_id))
        return isinstance(found, Group) and self._owns_group(found, principal)

    def _readable(self, principal: Principal) -> Iterator[SecretShelf]:
        """The caller's own shelf, their groups', their organization's and (cluster admins) the cluster's."""
        keys = [(Scope.USER, str(principal.user_id))] if principal.user_id else []
        keys += [(Scope.GROUP, str(g)) for g in sorted(principal.group_ids, key=str)]
        keys += [(Scope.ORGANIZATION, str(principal.organization_id))] if principal.organization_id else []
        keys += [(Scope.CLUSTER, "")] if principal.is_cluster_admin else []
        for scope, owner in keys:
            if (shelf := self.shelf(shelf_id(scope, owner))) is not None:
                yield shelf

    def _sealer(self) -> Cipher:
        if self.cipher is None:
            raise Conflict("secrets are not available: this control plane has no secret key configured")
        return self.cipher


def person(principal: Principal) -> None:
    if principal.source is not Source.ADMIN or principal.user_id is None:
        raise Forbidden(f"secrets are written with a person's token, not with the {principal.source.value} token")


@contextlib.contextmanager
def secret_errors() -> Iterator[None]:
    """SecretError from the rules becomes Invalid at its field (400 naming it)."""
    try:
        yield
    except SecretError as error:
        raise invalid(error.field, error.reason) from error

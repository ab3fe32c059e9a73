"""Reading secrets as a workflow's owner: which shelf a `secret://` reference means for a reader, the submission
check, and putting values into the env of a job as it is handed to its agent.

A reference the owner may not read is answered exactly as a missing one (no tenant learns what another keeps).
Resolution reads as the owner *now*: a member who left a group no longer gets its secrets, and a secret deleted
after submission fails its job at start with the reference named (exit 78), never running it without.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import msgspec

from domain.agent_protocol import Assignments, Start
from domain.app.errors import Invalid, NotFound
from domain.app.ids import group_id
from domain.app.unit_of_work import UnitOfWork
from domain.fuzzfile import Problem
from domain.secrets import (
    Cipher,
    CipherError,
    Reference,
    Scope,
    SecretError,
    SecretShelf,
    entry_id,
    parse_reference,
    referenced,
    shelf_id,
    uses,
)
from domain.secrets.references import IMAGE_SECRET_VARIABLE
from domain.tenancy import Role
from domain.tenancy.group import Group
from domain.tenancy.permissions import Principal
from domain.tenancy.user import User
from domain.workflow import Workflow

UNREADABLE = "no such secret, or not one the workflow's owner may read"
REFUSED_EXIT = 78  # EX_CONFIG: the job's configuration (a secret) is unusable


class Unresolvable(Exception):
    """A reference that cannot be read when its job starts; says which reference and why, never a value."""

    def __init__(self, variable: str, reference: str, reason: str = UNREADABLE) -> None:
        super().__init__(f"{variable}={reference}: {reason}")


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


def shelf_of(reference: Reference, reader: Reader) -> tuple[Scope, str] | None:
    """(scope, owner id) of the shelf the reference means for this reader, or None if it can mean none."""
    if reference.scope is Scope.USER:
        return (Scope.USER, reader.user_id) if reader.user_id else None
    if reference.scope is Scope.ORGANIZATION:
        return (Scope.ORGANIZATION, reader.organization_id) if reader.organization_id else None
    if reference.scope is Scope.CLUSTER:
        return (Scope.CLUSTER, "") if reader.cluster_admin else None
    if not reference.group:
        return (Scope.GROUP, reader.workflow_group_id) if reader.workflow_group_id else None
    if not reader.organization_id:
        return None
    return Scope.GROUP, str(group_id(UUID(reader.organization_id), reference.group))


def context(shelf: UUID, name: str) -> bytes:
    """What a ciphertext is bound to: one secret of one shelf (a ciphertext copied elsewhere does not open)."""
    return str(entry_id(shelf, name)).encode()


class SecretReading:
    """Reads shelves through the unit of work's repository; opens values only with the cipher it is given."""

    def __init__(self, uow: UnitOfWork, cipher: Cipher | None = None) -> None:
        self.uow, self.cipher = uow, cipher

    def check_references(self, definition: Any, principal: Principal) -> None:
        """Every `secret://` env entry of a definition must be one the submitter may read; Invalid names the rest."""
        reader, problems = Reader.of(principal), []
        for use in uses(definition):
            try:
                reference = parse_reference(use.text)
            except SecretError as error:
                problems.append(Problem(path=use.path, message=f"{use.text}: {error.reason}"))
                continue
            found = self.shelf_for(reference, reader)
            if found is None or reference.name not in found.entries:
                problems.append(Problem(path=use.path, message=f"{use.text}: {UNREADABLE}"))
        if problems:
            raise Invalid(problems)

    def resolve_assignments(self, answer: Assignments[Start]) -> Assignments[Start]:
        """An agent's assignments with values in place of references (an answer without any is returned as is)."""
        if not any(referenced(spec.env) for spec in answer.start):
            return answer
        return msgspec.structs.replace(answer, start=[self.resolve_spec(spec) for spec in answer.start])

    def resolve_spec(self, spec: Start) -> Start:
        """One run spec with its references' values; one that cannot be read is made to fail saying why."""
        if not referenced(spec.env):
            return spec
        try:
            workflow = self.uow.load(Workflow, UUID(spec.workflow_id), "workflow")
            return msgspec.structs.replace(spec, env=self.resolve_env(spec.env, workflow.owner))
        except Unresolvable as refused:
            return refused_spec(spec, str(refused))
        except (NotFound, ValueError):
            return refused_spec(spec, "its workflow is unknown, so its secrets cannot be read")

    def resolve_env(self, env: dict[str, str], owner: dict[str, str]) -> dict[str, str]:
        """The env with each reference replaced by its value, read as the workflow's owner; Unresolvable if not."""
        reader = self.owner_reader(owner)
        return {**env, **{k: self.open(_field(k), text, reader) for k, text in referenced(env).items()}}

    def open(self, variable: str, text: str, reader: Reader) -> str:
        try:
            reference = parse_reference(text)
        except SecretError as error:
            raise Unresolvable(variable, text, error.reason) from None
        shelf = self.shelf_for(reference, reader)
        entry = shelf.entries.get(reference.name) if shelf is not None else None
        if shelf is None or entry is None or self.cipher is None:
            raise Unresolvable(variable, text)
        try:
            return self.cipher.open(entry.sealed, context(shelf.id, entry.name)).decode()
        except CipherError as error:
            raise Unresolvable(variable, text, f"it cannot be decrypted ({error})") from None

    def shelf_for(self, reference: Reference, reader: Reader) -> SecretShelf | None:
        key = shelf_of(reference, reader)
        if key is None or (key[0] is Scope.GROUP and not self.member(key[1], reader)):
            return None
        return self.shelf(shelf_id(*key))

    def member(self, group: str, reader: Reader) -> bool:
        if reader.group_ids is not None:
            return group in reader.group_ids
        found = self.get(UUID(group))
        return isinstance(found, Group) and bool(reader.user_id) and UUID(reader.user_id) in found.members

    def owner_reader(self, owner: dict[str, str]) -> Reader:
        uid = owner.get("user_id", "")
        user = self.get(UUID(uid)) if uid else None
        admin = isinstance(user, User) and user.role is Role.CLUSTER_ADMIN
        return Reader(user_id=uid, organization_id=owner.get("organization_id", ""),
                      workflow_group_id=owner.get("group_id", ""), group_ids=None, cluster_admin=admin)

    def shelf(self, shelf: UUID) -> SecretShelf | None:
        found = self.get(shelf)
        return found if isinstance(found, SecretShelf) else None

    def get(self, aggregate: UUID) -> Any:
        return self.uow.repository.get(aggregate) if aggregate in self.uow.repository else None


def _field(variable: str) -> str:
    """How a failure names the reference: by its env variable, or as `image.secret` for the image's."""
    return "image.secret" if variable == IMAGE_SECRET_VARIABLE else variable


def check_references(uow: UnitOfWork, definition: Any, principal: Principal) -> None:
    """The submission check, for `WorkflowHandlers.submit_workflow` (it needs no key: it opens nothing)."""
    SecretReading(uow).check_references(definition, principal)


def refused_spec(spec: Start, reason: str) -> Start:
    """The job, made to fail at once saying why (the reason names references, never values)."""
    message = "roving: " + reason.replace("'", "")
    env = {k: v for k, v in spec.env.items() if not referenced({k: v})}
    return msgspec.structs.replace(spec, env=env, command=None, args=None, files={}, image="",  # pulls nothing
                                   script=f"echo '{message}' >&2\nexit {REFUSED_EXIT}\n")

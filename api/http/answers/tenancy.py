"""Answers about tenancy: tokens and who a caller is, organizations, users and groups with their priorities,
membership, preempt lists and POSIX ids, and revoked tokens, changed passwords and unlocked accounts; and how an
organization, a user and a group are answered from their view rows (their fields in the row's order, then names),
in one place each."""

from api.http.answers.base import Answer
from projections.tenancy import GroupRow, OrganizationRow, UserRow


class TokenPair(Answer):
    token: str
    expires_in: int
    refresh_token: str
    refresh_expires_in: int


class Whoami(Answer):
    user_id: str | None
    username: str
    role: str
    organization_id: str | None
    organization: str | None
    groups: list[str]
    group_names: list[str]
    uid: int | None


class Created(Answer, omit_defaults=True):
    """A new organization or group (`name`), or a new user (`username`): the other is left out."""

    id: str
    name: str | None = None
    username: str | None = None


class Organization(Answer):
    id: str
    name: str
    priority: int
    owners: list[str]
    owner_names: list[str]


def organization_of(row: OrganizationRow, owner_names: list[str]) -> Organization:
    return Organization(id=str(row.id), name=row.name, priority=row.priority, owners=[str(u) for u in row.owners],
                        owner_names=owner_names)


class Organizations(Answer):
    organizations: list[Organization]


class User(Answer):
    id: str
    organization_id: str | None
    username: str
    email: str
    role: str
    priority: int
    disabled: bool
    groups: list[str]
    uid: int | None
    group_names: list[str]


def user_of(row: UserRow, group_names: list[str]) -> User:
    """Never its password hash: the row has none."""
    return User(id=str(row.id), organization_id=str(row.organization_id) if row.organization_id else None,
                username=row.username, email=row.email, role=row.role, priority=row.priority, disabled=row.disabled,
                groups=[str(g) for g in row.groups], uid=row.uid, group_names=group_names)


class Users(Answer):
    users: list[User]


class Group(Answer):
    id: str
    organization_id: str
    name: str
    priority: int
    preempt: list[str]
    members: dict[str, str]  # user id -> role
    explainers: list[str]
    gid: int | None
    default_project: str  # the project its members' work counts toward when they name none ("": none)
    preempt_names: list[str]
    member_names: dict[str, str]


def group_of(row: GroupRow, preempt_names: list[str], member_names: dict[str, str]) -> Group:
    return Group(id=str(row.id), organization_id=str(row.organization_id), name=row.name, priority=row.priority,
                 preempt=[str(g) for g in row.preempt], members=row.members, explainers=[str(u) for u in row.explainers],
                 gid=row.gid, default_project=row.default_project, preempt_names=preempt_names,
                 member_names=member_names)


class Groups(Answer):
    groups: list[Group]


class PriorityChanged(Answer):
    id: str
    priority: int


class PosixId(Answer, omit_defaults=True):
    """The uid a user was given, or the gid a group was: the other is left out."""

    id: str
    uid: int | None = None
    gid: int | None = None


class PreemptList(Answer):
    id: str
    preempt: list[str]


class Membership(Answer, omit_defaults=True):
    """What changed: a member's `role`, its removal, or its `explain_allocation` grant; the rest is left out."""

    group: str
    user: str
    role: str | None = None
    removed: bool | None = None
    explain_allocation: bool | None = None


class Revoked(Answer, omit_defaults=True):
    """A revoked token; `already` only where the caller named it (a logout revokes its own, fresh)."""

    revoked: str  # the token's id (jti)
    already: bool | None = None


class Changed(Answer):
    changed: bool


class Unlocked(Answer):
    id: str
    unlocked: bool

"""Answers about tenancy: tokens and who a caller is, organizations, users and groups with their priorities,
membership, preempt lists and POSIX ids, and revoked tokens, changed passwords and unlocked accounts."""

from api.http.answers.base import Answer


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


class Created(Answer):
    """A new organization or group (`name`), or a new user (`username`)."""

    id: str
    name: str | None = None
    username: str | None = None


class Organization(Answer):
    id: str
    name: str
    priority: int
    owners: list[str]
    owner_names: list[str]


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
    group_names: list[str]
    uid: int | None = None


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
    preempt_names: list[str]
    member_names: dict[str, str]
    gid: int | None = None


class Groups(Answer):
    groups: list[Group]


class PriorityChanged(Answer):
    id: str
    priority: int


class PosixId(Answer):
    id: str
    uid: int | None = None
    gid: int | None = None


class PreemptList(Answer):
    id: str
    preempt: list[str]


class Membership(Answer):
    group: str
    user: str
    role: str | None = None
    removed: bool | None = None
    explain_allocation: bool | None = None


class Revoked(Answer):
    revoked: str  # the token's id (jti)
    already: bool | None = None


class Changed(Answer):
    changed: bool


class Unlocked(Answer):
    id: str
    unlocked: bool

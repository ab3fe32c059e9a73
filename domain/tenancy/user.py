"""The User aggregate: identity, account role, priority, password hash, login failures, lockout and disabling.

The aggregate never sees a clear password: registration and password changes carry the adapter's hash,
and a login attempt carries only whether the adapter found the password correct.
"""

from __future__ import annotations

import re
from datetime import datetime
from uuid import UUID

import msgspec
from eventsourcing.domain import event

from domain.tenancy import passwords
from domain.tenancy.common import (
    PriorityMessage,
    Role,
    TenancyError,
    TenantAggregate,
    require_aware,
    require_priority,
    require_role,
    role_name,
)

ACCOUNT_ROLES = frozenset({Role.USER, Role.ORG_OWNER, Role.CLUSTER_ADMIN})
USERNAME = re.compile(r"^[a-z][a-z0-9._-]{1,31}$")
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
HASH = re.compile(r"^[a-z0-9-]+(\$[^$\s]+){3,}$")


class LoginOutcome(msgspec.Struct, frozen=True):
    """What a login attempt decided; `reason` is safe to show the user."""

    accepted: bool
    reason: str
    locked_until: datetime | None = None


class User(TenantAggregate):
    uid: int | None = None  # the POSIX uid its jobs run as (PosixIds decides it); accounts before ids had none
    class PriorityUpdated(PriorityMessage, TenantAggregate.Event):
        kind = "user"
        old: int
        new: int
        by: str
        by_role: Role
        at: datetime

    class Registered(TenantAggregate.Created):
        organization_id: UUID | None
        username: str
        email: str
        password_hash: str
        role: Role
        by: str
        at: datetime

    @event(Registered)
    def __init__(self, id: UUID, organization_id: UUID | None, username: str, email: str, password_hash: str,
                 role: Role, by: str, at: datetime) -> None:
        self.organization_id, self.username, self.email = organization_id, username, email
        self.password_hash, self.role = password_hash, role
        self.priority = 0
        self.failed_logins = 0
        self.locked_until: datetime | None = None
        self.disabled, self.disabled_reason = False, ""
        self.last_login: datetime | None = None

    @classmethod
    def register(cls, id: UUID, organization_id: UUID | None, username: str, email: str, password_hash: str,
                 role: Role = Role.USER, *, by: str, at: datetime) -> User:
        """A new account; check the clear password with `passwords.require_strong` before hashing it."""
        if not USERNAME.match(username):
            raise TenancyError("username", "must be 2-32 characters: a lower-case letter, then a-z, 0-9, '.', '_' or '-'")
        if not EMAIL.match(email):
            raise TenancyError("email", "must look like name@example.org")
        _require_account_role(role)
        if role is not Role.CLUSTER_ADMIN and organization_id is None:
            raise TenancyError("organization_id", f"a {role.value} belongs to an organization")
        return cls(id=id, organization_id=organization_id, username=username, email=email,
                   password_hash=_require_hash(password_hash), role=role, by=by, at=require_aware(at))

    def change_password(self, password_hash: str, *, by: str, at: datetime) -> None:
        self._password_changed(password_hash=_require_hash(password_hash), by=by, at=require_aware(at))

    @event("PasswordChanged")
    def _password_changed(self, password_hash: str, by: str, at: datetime) -> None:
        self.password_hash = password_hash

    def rehash_password(self, password_hash: str, *, at: datetime) -> None:
        """The same password under stronger hash parameters, stored after a successful login."""
        self._password_rehashed(password_hash=_require_hash(password_hash), by=self.username, at=require_aware(at))

    @event("PasswordRehashed")
    def _password_rehashed(self, password_hash: str, by: str, at: datetime) -> None:
        self.password_hash = password_hash

    def login(self, password_ok: bool, at: datetime) -> LoginOutcome:
        """Record one attempt. A disabled or locked account refuses even the right password (and records nothing);
        a disabled account says so only to someone who knows its password."""
        at = require_aware(at)
        if self.disabled:
            return LoginOutcome(False, "account disabled" if password_ok else passwords.REFUSED_LOGIN)
        if self.locked_until is not None and passwords.is_locked(self.locked_until, at):
            return LoginOutcome(False, passwords.locked_message(self.locked_until), self.locked_until)
        if password_ok:
            self._login_succeeded(by=self.username, at=at)
            return LoginOutcome(True, "")
        failures = self._failures_before(at) + 1
        locked_until = passwords.lock_until(failures, at)
        self._login_failed(failures=failures, locked_until=locked_until, by=self.username, at=at)
        if locked_until is not None:
            return LoginOutcome(False, passwords.locked_message(locked_until), locked_until)
        return LoginOutcome(False, passwords.REFUSED_LOGIN)

    def _failures_before(self, at: datetime) -> int:
        lock_served = self.locked_until is not None and at >= self.locked_until
        return 0 if lock_served else self.failed_logins

    @event("LoginSucceeded")
    def _login_succeeded(self, by: str, at: datetime) -> None:
        self.failed_logins, self.locked_until, self.last_login = 0, None, at

    @event("LoginFailed")
    def _login_failed(self, failures: int, locked_until: datetime | None, by: str, at: datetime) -> None:
        self.failed_logins, self.locked_until = failures, locked_until

    def is_locked(self, at: datetime) -> bool:
        return passwords.is_locked(self.locked_until, at)

    def unlock(self, *, by: str, at: datetime) -> None:
        """An administrator lifts a lock early (and clears the failure count)."""
        if self.failed_logins or self.locked_until is not None:
            self._unlocked(by=by, at=require_aware(at))

    @event("Unlocked")
    def _unlocked(self, by: str, at: datetime) -> None:
        self.failed_logins, self.locked_until = 0, None

    def disable(self, reason: str, *, by: str, at: datetime) -> None:
        if not reason.strip():
            raise TenancyError("reason", "say why the account is disabled")
        if not self.disabled:
            self._disabled(reason=reason.strip(), by=by, at=require_aware(at))

    @event("Disabled")
    def _disabled(self, reason: str, by: str, at: datetime) -> None:
        self.disabled, self.disabled_reason = True, reason

    def enable(self, *, by: str, at: datetime) -> None:
        if self.disabled:
            self._enabled(by=by, at=require_aware(at))

    @event("Enabled")
    def _enabled(self, by: str, at: datetime) -> None:
        self.disabled, self.disabled_reason = False, ""

    def set_uid(self, uid: int, *, by: str, at: datetime) -> bool:
        """Record the uid PosixIds gave this account (allocated or set by an admin); False when unchanged."""
        if uid == self.uid:
            return False
        self._uid_set(uid=uid, by=by, at=require_aware(at))
        return True

    @event("UidSet")
    def _uid_set(self, uid: int, by: str, at: datetime) -> None:
        self.uid = uid

    def set_role(self, role: Role, *, by: str, by_role: Role, at: datetime) -> None:
        """Org owners may make users and org owners; only a cluster admin may grant or take cluster_admin."""
        _require_account_role(role)
        touches_admin = Role.CLUSTER_ADMIN in (role, self.role)
        require_role(by_role, {Role.CLUSTER_ADMIN} if touches_admin else {Role.CLUSTER_ADMIN, Role.ORG_OWNER},
                     "change this account's role")
        if role is not self.role:
            self._role_changed(role=role, by=by, by_role=by_role, at=require_aware(at))

    @event("RoleChanged")
    def _role_changed(self, role: Role, by: str, by_role: Role, at: datetime) -> None:
        self.role = role

    def set_priority(self, priority: int, *, by: str, by_role: Role, at: datetime) -> bool:
        """An org owner (of the user's organization) or a cluster admin; returns False when unchanged."""
        require_role(by_role, {Role.ORG_OWNER, Role.CLUSTER_ADMIN}, "set a user's priority")
        priority = require_priority(priority)
        if priority == self.priority:
            return False
        self._priority_updated(old=self.priority, new=priority, by=by, by_role=by_role, at=require_aware(at))
        return True

    @event(PriorityUpdated)
    def _priority_updated(self, old: int, new: int, by: str, by_role: Role, at: datetime) -> None:
        self.priority = new


def _require_account_role(role: Role) -> None:
    if role not in ACCOUNT_ROLES:
        raise TenancyError("role", f"an account role is user, org_owner or cluster_admin, got {role_name(role)}")


def _require_hash(password_hash: str) -> str:
    if not HASH.match(password_hash):
        raise TenancyError("password_hash", "must be a hash like scrypt$n$r$p$salt$hash, never a clear password")
    return password_hash

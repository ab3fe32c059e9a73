"""Credential handlers: password login with lockout (and rehashing under stronger parameters), the caller's own
password, token revocation and spending a refresh token; passwords are hashed by an injected PasswordHasher."""

from __future__ import annotations

from datetime import datetime
from types import TracebackType
from typing import Protocol
from uuid import UUID

from domain.app.errors import Forbidden, Invalid, LoginRefused, NotFound, invalid
from domain.app.ids import user_id
from domain.app.unit_of_work import UnitOfWork, command
from domain.fuzzfile import Problem
from domain.tenancy import TenancyError, User
from domain.tenancy.lockout import StrangerLockout
from domain.tenancy.passwords import REFUSED_LOGIN, password_problems
from domain.tenancy.permissions import Principal
from domain.tenancy.revocation import RevokedToken, family_jti, revocation_id


class PasswordHasher(Protocol):
    """Injected by the composition root (adapters.auth.password_hash); the domain never hashes itself."""

    def hash(self, password: str) -> str: ...

    def verify(self, password: str, stored: str) -> bool: ...

    def needs_rehash(self, stored: str) -> bool: ...


class CredentialHandlers:
    """The credential handlers of TenancyHandlers (which owns the unit of work, hasher and lockout they use)."""

    uow: UnitOfWork
    passwords: PasswordHasher
    strangers: StrangerLockout

    @command
    def login(self, username: str, password: str, at: datetime) -> User:
        """One answer and one cost whoever asks: an unknown name pays a full hash at today's parameters and is
        counted and locked like an account; a right password under old parameters is stored again, stronger."""
        uid = user_id(username)
        if uid not in self.uow.repository:
            self.passwords.hash(password)  # the work a verify at today's parameters costs
            reason, _ = self.strangers.fail(username, at)
            raise LoginRefused(reason)
        user: User = self.uow.repository.get(uid)
        # A locked account refuses even the right password and says so to anyone: no hash to spend on it
        locked = not user.disabled and user.is_locked(at)
        ok = not locked and self.passwords.verify(password, user.password_hash)
        stale = not locked and self._needs_rehash(user.password_hash)
        outcome = user.login(ok, at)
        if stale:  # a right password is stored again; a wrong one costs what a current hash would
            new_hash = self.passwords.hash(password)
            if outcome.accepted:
                user.rehash_password(new_hash, at=at)
        self.uow.save(user)
        if not outcome.accepted:
            raise LoginRefused(outcome.reason or REFUSED_LOGIN)
        return user

    @command
    def change_password(self, principal: Principal, current: str, new: str, at: datetime) -> None:
        """The caller's own password, given the current one (a wrong one counts as a failed login)."""
        if principal.user_id is None or principal.user_id not in self.uow.repository:
            raise NotFound("user")
        user = self.uow.load(User, principal.user_id, "user")
        if not self.passwords.verify(current, user.password_hash):
            user.login(False, at)
            self.uow.save(user)
            raise invalid("current_password", "is not this account's password")
        problems = password_problems(new, user.username, user.email)
        if current == new:
            problems.append("must differ from the current password")
        if problems:
            raise Invalid([Problem(path="new_password", message=p) for p in problems])
        with tenancy_errors():
            user.change_password(self.passwords.hash(new), by=principal.username, at=at)
        self.uow.save(user)

    @command
    def revoke_token(self, jti: str, subject: UUID | None, expires: datetime, reason: str, principal: Principal,
                     at: datetime) -> bool:
        """Refuse one token from now on: its holder (logout) or a cluster admin. False when it already was."""
        if not principal.is_cluster_admin and (principal.user_id is None or subject != principal.user_id):
            raise Forbidden("only a cluster admin may revoke another principal's token")
        with self.uow.repository.uncached():  # revocations are read from the log, never from memory
            if revocation_id(jti) in self.uow.repository:
                return False
        with tenancy_errors():
            revoked = RevokedToken.revoke(jti, str(subject or ""), expires, reason, by=principal.username, at=at)
        self.uow.save(revoked)
        return True

    @command
    def spend_refresh_token(self, jti: str, family: str, subject: UUID, expires: datetime, family_expires: datetime,
                            at: datetime) -> str | None:
        """Use a refresh token up (revoked from now on): None when the caller may have a new pair, else why not.
        A token already used up is a reuse (a stolen copy, or the thief got there first): the whole login's
        tokens are revoked, until `family_expires` (later than any token of the family can run)."""
        with self.uow.repository.uncached():  # a reused refresh token is told from the log, never from memory
            if not family or revocation_id(family_jti(family)) in self.uow.repository:
                return "revoked"
            reused = revocation_id(jti) in self.uow.repository
        if reused:
            with tenancy_errors():
                self.uow.save(RevokedToken.revoke(family_jti(family), str(subject), family_expires,
                                                  "refresh token reused", by="roving", at=at))
            return "refresh token reused; this login's tokens are all revoked, log in again"
        if subject not in self.uow.repository:
            return "unknown account"
        user = self.uow.load(User, subject, "user")
        if user.disabled:
            return "account disabled"
        with tenancy_errors():
            self.uow.save(RevokedToken.revoke(jti, str(subject), expires, "refreshed", by=user.username, at=at))
        return None

    def _needs_rehash(self, stored: str) -> bool:
        check = getattr(self.passwords, "needs_rehash", None)  # an injected hasher may predate rehashing
        return bool(check(stored)) if check is not None else False


class tenancy_errors:
    """A refusal by a tenancy aggregate becomes Invalid, naming its field."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if isinstance(error, ValueError) and not isinstance(error, TenancyError) and kind is ValueError:
            raise Invalid([Problem(path="role", message=str(error))]) from error
        if isinstance(error, TenancyError):
            raise Invalid([Problem(path=error.field, message=error.reason)]) from error

"""Password policy and login lockout rules: pure checks that never see a clock or echo a password back."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

MIN_LENGTH = 12
MIN_IDENTITY_PART = 3  # a one- or two-letter name would forbid half the alphabet
MAX_FAILED_LOGINS = 5
LOCKOUT = timedelta(minutes=15)
PRODUCT_NAMES = ("roving", "fuzzball")  # the first words a guesser tries against this site
REFUSED_LOGIN = "wrong username or password"  # the one answer for an unknown user and a wrong password


class WeakPassword(ValueError):
    """A password the policy refuses; `problems` lists every rule it breaks."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def password_problems(password: str, username: str, email: str) -> list[str]:
    """Every rule the password breaks, as messages for the user; empty when it is acceptable."""
    problems = [message for rule, message in _RULES if not rule(password)]
    lowered = password.casefold()
    if _contains(lowered, username):
        problems.append("must not contain the username")
    if _contains(lowered, email.partition("@")[0]):
        problems.append("must not contain the local part of the email address")
    problems.extend(f"must not contain the product name {name!r}" for name in PRODUCT_NAMES if name in lowered)
    return problems


def require_strong(password: str, username: str, email: str) -> None:
    """Raise WeakPassword naming every broken rule."""
    problems = password_problems(password, username, email)
    if problems:
        raise WeakPassword(problems)


def _contains(lowered_password: str, part: str) -> bool:
    part = part.strip().casefold()
    return len(part) >= MIN_IDENTITY_PART and part in lowered_password


_RULES: tuple[tuple[Callable[[str], bool], str], ...] = (
    (lambda p: len(p) >= MIN_LENGTH, f"must be at least {MIN_LENGTH} characters long"),
    (lambda p: any(c.isupper() for c in p) and any(c.islower() for c in p),
     "must mix upper-case and lower-case letters"),
    (lambda p: any(c.isdigit() for c in p), "must contain a digit"),
    (lambda p: any(not c.isalnum() for c in p), "must contain a special character (not a letter or digit)"),
)


def lock_until(failures: int, at: datetime) -> datetime | None:
    """After `failures` consecutive failed logins ending at `at`: when the lock ends, or None for no lock."""
    return at + LOCKOUT if failures >= MAX_FAILED_LOGINS else None


def is_locked(locked_until: datetime | None, at: datetime) -> bool:
    return locked_until is not None and at < locked_until


def locked_message(locked_until: datetime) -> str:
    return f"locked until {locked_until.isoformat()}"

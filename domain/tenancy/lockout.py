"""Failed logins for usernames that have no account: counted and locked exactly as an account's are.

An attacker learns nothing by hammering a name: an unknown one locks after the same number of failures,
for the same time, with the same answer, as a real account. Held in memory per process (no event: anyone
could otherwise write to the log by guessing names) and bounded, the oldest names forgotten first.
"""

from __future__ import annotations

from collections import OrderedDict
from datetime import datetime

from domain.tenancy import passwords

MAX_NAMES = 10_000


class StrangerLockout:
    """Per-username failure counts and locks for names the repository does not know."""

    def __init__(self, max_names: int = MAX_NAMES) -> None:
        self.max_names = max_names
        self._names: OrderedDict[str, tuple[int, datetime | None]] = OrderedDict()

    def fail(self, username: str, at: datetime) -> tuple[str, datetime | None]:
        """Record one failure (unless locked); the answer a real account would give and its lock end."""
        name = username.strip().lower()
        failures, locked_until = self._names.pop(name, (0, None))
        if locked_until is not None and at < locked_until:
            self._names[name] = (failures, locked_until)
            return passwords.locked_message(locked_until), locked_until
        if locked_until is not None:  # the lock was served: counting starts again, as for an account
            failures = 0
        failures += 1
        locked_until = passwords.lock_until(failures, at)
        self._names[name] = (failures, locked_until)
        while len(self._names) > self.max_names:
            self._names.popitem(last=False)
        if locked_until is not None:
            return passwords.locked_message(locked_until), locked_until
        return passwords.REFUSED_LOGIN, None

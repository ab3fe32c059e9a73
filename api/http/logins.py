"""Password checks apart from every other request: their own small worker pool, and limits per account and address.

A password hash is made to be costly (scrypt at 128 MiB and about a third of a second of a core), and anyone may
ask for one: `POST /v4/auth/login` needs no token. Run in the API's shared thread pool, 80 wrong-password logins at
once took its 40 threads (another tenant's submit waited 65 s) and 40 hashes' memory at once (5 GB). Here:

- every password check (login, the sign-in form, a password change) runs in `LoginGate`'s own pool of `workers`
  threads, so the shared pool and the cores keep serving everything else, and at most `workers` hashes are in
  memory at once;
- at most `waiting` checks may queue for that pool; more is a 503 with Retry-After, answered at once;
- each address and each account has a token bucket (a burst, then one attempt per few seconds), and an account has
  one check at a time; past either, a 429 with Retry-After, also without a hash.

The buckets are per process (`ROVING_API_WORKERS` processes each keep their own) and in memory: they slow a guesser
down, the account lockout (domain/tenancy/passwords.py) stops one.
"""

from __future__ import annotations

import functools
import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import anyio.to_thread
from anyio import CapacityLimiter
from starlette.requests import Request
from starlette.responses import Response

from api.http.errors import problem

T = TypeVar("T")
HASH_MEMORY = 128 * 2**20  # one scrypt hash at today's parameters (adapters/auth/password_hash.py)


class TooManyLogins(Exception):
    """A password check refused before it ran: `status` 429 (this caller) or 503 (everyone), retry after `retry_after` s."""

    def __init__(self, status: int, reason: str, retry_after: float) -> None:
        super().__init__(reason)
        self.status, self.reason, self.retry_after = status, reason, max(1, math.ceil(retry_after))


@dataclass(frozen=True)
class Limits:
    burst: int          # attempts at once after a quiet spell
    refill: float       # seconds until one more attempt is allowed


ADDRESS = Limits(burst=20, refill=3.0)   # an office behind one address: 20 at once, then 20 a minute
ACCOUNT = Limits(burst=10, refill=6.0)   # past the lockout's 5 failures, which then answers (and costs no hash)
MAX_KEYS = 100_000  # buckets kept per kind; the oldest go first (a spray of names must not grow memory either)


class Buckets:
    """Token buckets by key, full when first seen; thread-safe (the sign-in form and the API share them)."""

    def __init__(self, limits: Limits, clock: Callable[[], float] = time.monotonic) -> None:
        self.limits, self.clock = limits, clock
        self.levels: dict[str, tuple[float, float]] = {}  # key -> (tokens, when)
        self.lock = threading.Lock()

    def take(self, key: str) -> float:
        """0.0 when an attempt is allowed now (and counted), else the seconds until one is."""
        with self.lock:
            now = self.clock()
            tokens, when = self.levels.pop(key, (float(self.limits.burst), now))
            tokens = min(float(self.limits.burst), tokens + (now - when) / self.limits.refill)
            wait = 0.0 if tokens >= 1 else (1 - tokens) * self.limits.refill
            self.levels[key] = (tokens - 1 if not wait else tokens, now)  # re-inserted: the newest key is last
            while len(self.levels) > MAX_KEYS:
                del self.levels[next(iter(self.levels))]
            return wait

    def give_back(self, key: str) -> None:
        """A right password costs its account nothing: a user who mistyped twice is not held up after."""
        with self.lock:
            if key in self.levels:
                tokens, when = self.levels[key]
                self.levels[key] = (min(float(self.limits.burst), tokens + 1), when)


def default_workers() -> int:
    """One thread per two cores, at least one: hashes never take every core from the rest of the API."""
    return max(1, (os.cpu_count() or 2) // 2)


class LoginGate:
    """Admits a password check (limits), then runs it in the gate's own pool."""

    def __init__(self, workers: int | None = None, waiting: int | None = None, address: Limits = ADDRESS,
                 account: Limits = ACCOUNT, clock: Callable[[], float] = time.monotonic) -> None:
        self.workers = workers or default_workers()
        self.waiting_limit = waiting if waiting is not None else 8 * self.workers
        self.pool = CapacityLimiter(self.workers)
        self.addresses, self.accounts = Buckets(address, clock), Buckets(account, clock)
        self.checking: set[str] = set()  # accounts with a check under way
        self.queued = 0
        self.lock = threading.Lock()

    @property
    def memory_bound(self) -> int:
        """The most memory password hashes hold at once in this process."""
        return self.workers * HASH_MEMORY

    async def check(self, account: str, address: str, work: Callable[..., T], *args: object) -> T:
        """Run `work(*args)` (a login or password change) if this account and address may try now; a right password
        (no exception) gives the account its attempt back."""
        account = account.strip().casefold()
        self._admit(account, address)
        try:
            result = await anyio.to_thread.run_sync(functools.partial(work, *args), limiter=self.pool)
        finally:
            with self.lock:
                self.queued -= 1
                self.checking.discard(account)
        self.accounts.give_back(account)
        return result

    def _admit(self, account: str, address: str) -> None:
        with self.lock:
            if self.queued >= self.waiting_limit:
                seconds = self.queued / self.workers * 0.4  # a hash takes about 0.35 s of a core
                raise TooManyLogins(503, f"{self.queued} password checks are waiting; try again shortly", seconds)
            if account in self.checking:
                raise TooManyLogins(429, "a login for this account is being checked; wait for its answer", 1)
            if wait := self.addresses.take(address):
                raise TooManyLogins(429, "too many logins from this address; slow down", wait)
            if wait := self.accounts.take(account):
                raise TooManyLogins(429, "too many logins for this account; slow down", wait)
            self.checking.add(account)
            self.queued += 1


def gate(request: Request) -> LoginGate:
    """The app's gate (`create_app` makes one per process)."""
    return request.app.state.logins


def address_of(request: Request) -> str:
    """The caller's address (a trusted proxy's X-Forwarded-For already applied by the server)."""
    return request.client.host if request.client is not None else "unknown"


async def on_too_many_logins(request: Request, error: TooManyLogins) -> Response:
    answer = problem(error.status, error.reason, "password")
    answer.headers["Retry-After"] = str(error.retry_after)
    return answer

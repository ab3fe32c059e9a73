"""Password checks apart from every other request: their own small worker pool, and limits per account and address.

A password hash is made to be costly (scrypt at 128 MiB and about a third of a second of a core), and anyone may
ask for one: `POST /v4/auth/login` needs no token. Run in the API's shared thread pool, 80 wrong-password logins at
once took its 40 threads (another tenant's submit waited 65 s) and 40 hashes' memory at once (5 GB). Here:

- every password check (login, the sign-in form, a password change) runs in `LoginGate`'s own pool of `workers`
  threads, so the shared pool and the cores keep serving everything else, and at most `workers` hashes are in
  memory at once;
- each address prefix (/24 for IPv4, /64 for IPv6: one network, however many addresses it sprays from) and each
  account has a token bucket (a burst, then one attempt per few seconds), and an account has one check at a time;
  past either, a 429 with Retry-After, also without a hash. An IPv6 /64 is also counted in its site's /48 (SITE):
  one /48 holds 65,536 /64s, each a fresh bucket, enough to fill the clean lane on its own;
- checks wait for the pool in three lanes, each holding at most `waiting` (the clean lane CLEAN_ROOM times as many:
  a waiting check costs no hash); a full lane is a 503 with Retry-After, answered at once. A free worker takes the
  first lane first: `known` (an account that signed in from this prefix before, which no spray of wrong passwords
  ever reaches), then `clean` (an account and a prefix without recent failures, one check per prefix at a time),
  then `suspect` (the rest: where a spray ends up after its first failure).
  So a spray from many addresses fills its own lane and answers its own 503s, while a correct password of an account
  it does not target still goes through; an account under attack may be held up, its lockout too.

The buckets are per process (`ROVING_API_WORKERS` processes each keep their own) and in memory: they slow a guesser
down, the account lockout (domain/tenancy/passwords.py) stops one. Nothing tells a first sign-in from a new network
apart from a sprayer's first guess from one: a spray from N fresh prefixes may delay such a sign-in by N hashes
(once per PREFIX_TRUST refill), and deny it only past the clean lane's room; a known sign-in it never delays.
"""

from __future__ import annotations

import functools
import ipaddress
import math
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import anyio
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


ADDRESS = Limits(burst=20, refill=3.0)   # an office behind one prefix: 20 at once, then 20 a minute
ACCOUNT = Limits(burst=10, refill=6.0)   # past the lockout's 5 failures, which then answers (and costs no hash)
PREFIX_TRUST = Limits(burst=1, refill=300.0)   # one failed check makes a prefix suspect for five minutes
ACCOUNT_TRUST = Limits(burst=3, refill=300.0)  # failed checks for an account before it counts as under attack
SITE = Limits(burst=60, refill=1.0)  # an IPv6 /48 (a site's many /64s): three offices' worth, then one a second
SITE_TRUST = Limits(burst=4, refill=300.0)  # failed checks from a /48 (any of its /64s) before it is suspect
MAX_KEYS = 100_000  # buckets kept per kind; the oldest go first (a spray of names must not grow memory either)
LANES = ("known", "clean", "suspect")  # in the order a free worker takes them
CLEAN_ROOM = 16  # the clean lane holds this many times `waiting`: one check per prefix, so many prefixes' firsts


def prefix_of(address: str, site: bool = False) -> str:
    """The network an address belongs to for the limits: its /24 (IPv4, also IPv4-mapped IPv6) or its /64 (IPv6);
    with `site`, an IPv6 address's /48 (an IPv4 one's /24 still)."""
    try:
        ip = ipaddress.ip_address(address.partition("%")[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    bits = 24 if ip.version == 4 else 48 if site else 64
    return str(ipaddress.ip_network(f"{ip}/{bits}", strict=False))


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

    def level(self, key: str) -> float:
        """The tokens `key` has now, without taking one."""
        with self.lock:
            tokens, when = self.levels.get(key, (float(self.limits.burst), self.clock()))
            return min(float(self.limits.burst), tokens + (self.clock() - when) / self.limits.refill)

    def give_back(self, key: str) -> None:
        """A right password costs its account nothing: a user who mistyped twice is not held up after."""
        with self.lock:
            if key in self.levels:
                tokens, when = self.levels[key]
                self.levels[key] = (min(float(self.limits.burst), tokens + 1), when)


def default_workers() -> int:
    """One thread per two cores, at least one: hashes never take every core from the rest of the API."""
    return max(1, (os.cpu_count() or 2) // 2)


class Lanes:
    """The pool's `workers` slots, handed to waiting checks lane by lane (LANES' order), first come first served
    within a lane. Only the event loop calls it."""

    def __init__(self, slots: int) -> None:
        self.free = slots
        self.waiting: dict[str, deque[anyio.Event]] = {lane: deque() for lane in LANES}

    async def acquire(self, lane: str) -> None:
        if self.free > 0 and not any(self.waiting.values()):
            self.free -= 1
            return
        turn = anyio.Event()
        self.waiting[lane].append(turn)
        try:
            await turn.wait()
        except BaseException:  # the caller went away: give up its place, or pass on the slot it was handed
            if turn.is_set():
                self.release()
            else:
                self.waiting[lane].remove(turn)
            raise

    def release(self) -> None:
        for lane in LANES:
            if self.waiting[lane]:
                self.waiting[lane].popleft().set()
                return
        self.free += 1


class LoginGate:
    """Admits a password check (limits, lane), then runs it in the gate's own pool."""

    def __init__(self, workers: int | None = None, waiting: int | None = None, address: Limits = ADDRESS,
                 account: Limits = ACCOUNT, clock: Callable[[], float] = time.monotonic) -> None:
        self.workers = workers or default_workers()
        self.waiting_limit = waiting if waiting is not None else 8 * self.workers
        self.pool = CapacityLimiter(self.workers)
        self.lanes = Lanes(self.workers)
        self.addresses, self.accounts = Buckets(address, clock), Buckets(account, clock)
        self.prefix_trust, self.account_trust = Buckets(PREFIX_TRUST, clock), Buckets(ACCOUNT_TRUST, clock)
        self.sites, self.site_trust = Buckets(SITE, clock), Buckets(SITE_TRUST, clock)  # IPv6 /48s only
        self.known: dict[tuple[str, str], None] = {}  # (account, prefix) that signed in, oldest first
        self.checking: set[str] = set()  # accounts with a check under way
        self.clean_checks: set[str] = set()  # sites (/24, /48) with a check in the clean lane
        self.queued = dict.fromkeys(LANES, 0)
        self.room = {"known": self.waiting_limit, "clean": CLEAN_ROOM * self.waiting_limit, "suspect": self.waiting_limit}
        self.lock = threading.Lock()

    @property
    def memory_bound(self) -> int:
        """The most memory password hashes hold at once in this process."""
        return self.workers * HASH_MEMORY

    async def check(self, account: str, address: str, work: Callable[..., T], *args: object) -> T:
        """Run `work(*args)` (a login or password change) if this account and address may try now; a right password
        (no exception) gives the account its attempt back and makes its prefix known, a wrong one (an exception)
        counts against the trust of both."""
        account, prefix, site = account.strip().casefold(), prefix_of(address), prefix_of(address, site=True)
        lane = self._admit(account, prefix, site)
        try:
            await self.lanes.acquire(lane)
            try:
                result = await anyio.to_thread.run_sync(functools.partial(work, *args), limiter=self.pool)
            finally:
                self.lanes.release()
        except Exception:
            self.prefix_trust.take(prefix)
            self.account_trust.take(account)
            if site != prefix:
                self.site_trust.take(site)
            raise
        finally:
            with self.lock:
                self.queued[lane] -= 1
                self.checking.discard(account)
                if lane == "clean":
                    self.clean_checks.discard(site)
        self.accounts.give_back(account)
        self._remember(account, prefix)
        return result

    def _lane(self, account: str, prefix: str, site: str) -> str:
        if (account, prefix) in self.known:
            return "known"
        clean = self.prefix_trust.level(prefix) >= 1 and self.account_trust.level(account) >= 1
        clean = clean and (site == prefix or self.site_trust.level(site) >= 1)
        return "clean" if clean and site not in self.clean_checks else "suspect"

    def _admit(self, account: str, prefix: str, site: str) -> str:
        with self.lock:
            lane = self._lane(account, prefix, site)
            if self.queued[lane] >= self.room[lane]:
                seconds = self.queued[lane] / self.workers * 0.4  # a hash takes about 0.35 s of a core
                raise TooManyLogins(503, f"{self.queued[lane]} password checks are waiting; try again shortly", seconds)
            if account in self.checking:
                raise TooManyLogins(429, "a login for this account is being checked; wait for its answer", 1)
            if lane != "known" and (wait := self.addresses.take(prefix)):  # a neighbour's spray spends no known one's
                raise TooManyLogins(429, "too many logins from this address; slow down", wait)
            if lane != "known" and site != prefix and (wait := self.sites.take(site)):
                raise TooManyLogins(429, "too many logins from this network; slow down", wait)
            if wait := self.accounts.take(account):
                raise TooManyLogins(429, "too many logins for this account; slow down", wait)
            self.checking.add(account)
            self.queued[lane] += 1
            if lane == "clean":
                self.clean_checks.add(site)
            return lane

    def _remember(self, account: str, prefix: str) -> None:
        with self.lock:
            self.known.pop((account, prefix), None)
            self.known[(account, prefix)] = None
            while len(self.known) > MAX_KEYS:
                del self.known[next(iter(self.known))]


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

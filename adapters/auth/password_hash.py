"""Password hashing with scrypt: random salt, constant-time verify, a versioned `scrypt$n$r$p$salt$hash` string.

Salt and hash are unpadded base64url. The parameters travel with each hash, so raising them later
leaves old hashes verifiable; `needs_rehash` says when to store a fresh hash after a successful login.
The defaults are OWASP's current guidance for scrypt (N=2^17, r=8, p=1): 128 MiB and about a third of a
second a hash, so `ScryptPasswords` lets only as many run at once as there are cores.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import threading

from msgspec import Struct

SCHEME = "scrypt"
N, R, P = 2**17, 8, 1
SALT_BYTES, HASH_BYTES = 16, 32
MAX_N = 2**20  # a stored hash must not be able to ask for gigabytes of memory


class MalformedHash(ValueError):
    """A stored hash string that is not `scrypt$n$r$p$salt$hash` with sane parameters."""


class Params(Struct, frozen=True):
    n: int = N
    r: int = R
    p: int = P


def hash_password(password: str, params: Params = Params()) -> str:
    """A fresh hash of `password` with a new random salt."""
    salt = secrets.token_bytes(SALT_BYTES)
    digest = _scrypt(password, salt, params)
    return f"{SCHEME}${params.n}${params.r}${params.p}${_b64(salt)}${_b64(digest)}"


def verify_password(password: str, stored: str) -> bool:
    """True when `password` produced `stored`; the comparison takes the same time wherever they differ."""
    params, salt, expected = parse(stored)
    return hmac.compare_digest(_scrypt(password, salt, params, len(expected)), expected)


def needs_rehash(stored: str, params: Params = Params()) -> bool:
    """True when any of `stored`'s parameters is weaker than `params`."""
    old, _, _ = parse(stored)
    return old.n < params.n or old.r < params.r or old.p < params.p


def parse(stored: str) -> tuple[Params, bytes, bytes]:
    parts = stored.split("$")
    if len(parts) != 6 or parts[0] != SCHEME:
        raise MalformedHash(f"expected {SCHEME}$n$r$p$salt$hash with 6 fields, got {len(parts)}")
    try:
        n, r, p = (int(x) for x in parts[1:4])
        salt, digest = _unb64(parts[4]), _unb64(parts[5])
    except ValueError as error:
        raise MalformedHash(f"unreadable hash field: {error}") from None
    if not (1 < n <= MAX_N and n & (n - 1) == 0 and 0 < r <= 32 and 0 < p <= 16):
        raise MalformedHash(f"scrypt parameters out of range: n={n} r={r} p={p}")
    if not salt or len(digest) < 16:
        raise MalformedHash("salt or hash too short")
    return Params(n, r, p), salt, digest


def _scrypt(password: str, salt: bytes, params: Params, length: int = HASH_BYTES) -> bytes:
    memory = 128 * params.r * params.n * 2 + 2**20
    return hashlib.scrypt(password.encode(), salt=salt, n=params.n, r=params.r, p=params.p,
                          maxmem=memory, dklen=length)


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)


class ScryptPasswords:
    """The password hasher the application is given; at most `parallel` hashes in memory at once (128 MiB each),
    so a burst of logins queues instead of taking the host's memory."""

    def __init__(self, params: Params = Params(), parallel: int | None = None) -> None:
        self.params = params
        self._turns = threading.BoundedSemaphore(parallel or os.cpu_count() or 2)

    def hash(self, password: str) -> str:
        with self._turns:
            return hash_password(password, self.params)

    def verify(self, password: str, stored: str) -> bool:
        with self._turns:
            return verify_password(password, stored)

    def needs_rehash(self, stored: str) -> bool:
        try:
            return needs_rehash(stored, self.params)
        except MalformedHash:
            return True

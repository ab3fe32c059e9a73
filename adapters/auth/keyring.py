"""The signing key ring: the newest key signs, retired keys still verify until every token they signed expired.

`signing.key` holds the signing key; `rotate_key` moves it to `signing.key.retired/<kid>.key` and writes a new
one, so a rotation keeps year-long webhook tokens working. A retired key is dropped once it is older than
the longest token lifetime. A `KeyRing` is the signing key's own bytes (it goes wherever a key went) and
carries the retired keys; a process that meets a key id it does not know reads the directory again, so
tokens signed by a newer key elsewhere verify too.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import stat
import time
from collections.abc import Iterable
from pathlib import Path

from adapters.private_files import create_private, write_private

KEY_BYTES = 32
RETIRED_FOR_SECONDS = 366 * 86400  # the longest token (a webhook's) lives a year
REREAD_SECONDS = 5.0


class KeyFileError(Exception):
    """The signing key file is unusable: readable by others, or too short."""


def key_id(key: bytes) -> str:
    """A key's public name: a short digest, never the key."""
    return base64.urlsafe_b64encode(hashlib.sha256(b"roving-kid:" + key).digest()[:6]).decode()


class KeyRing(bytes):
    """The signing key (these bytes) and every key that may still verify, by key id."""

    path: Path | None
    verifying: dict[str, bytes]
    _read_at: float

    def __new__(cls, signing: bytes, retired: Iterable[bytes] = (), path: Path | None = None) -> KeyRing:
        ring = super().__new__(cls, signing)
        ring.path, ring._read_at = path, time.monotonic()
        ring.verifying = {key_id(k): k for k in retired}
        ring.verifying[key_id(signing)] = bytes(signing)
        return ring

    @property
    def kid(self) -> str:
        return key_id(bytes(self))

    def key_for(self, kid: str) -> bytes | None:
        """The key named `kid`, reading the ring's files again (at most every few seconds) when it is new."""
        if kid not in self.verifying and self.path is not None and time.monotonic() - self._read_at > REREAD_SECONDS:
            self._read_at = time.monotonic()
            current, retired = _read_ring(self.path)
            self.verifying.update({key_id(k): k for k in (current, *retired)})
        return self.verifying.get(kid)

    def candidates(self) -> list[bytes]:
        return [bytes(self), *(k for k in self.verifying.values() if k != bytes(self))]


def ring_of(key: bytes) -> KeyRing:
    return key if isinstance(key, KeyRing) else KeyRing(key)


def load_or_create_key(path: Path) -> KeyRing:
    """The ring at `path`: its signing key (made, mode 0600, on first use) and its retired keys."""
    path = Path(path)
    _create(path, secrets.token_bytes(KEY_BYTES))
    current, retired = _read_ring(path)
    return KeyRing(current, retired, path)


def rotate_key(path: Path, now: float | None = None) -> KeyRing:
    """Retire the signing key (it keeps verifying) and sign with a new one from now on."""
    path = Path(path)
    current = load_or_create_key(path)
    retired = _retired_dir(path)
    retired.mkdir(mode=0o700, exist_ok=True)
    _create(retired / f"{current.kid}.key", bytes(current))
    write_private(path, secrets.token_bytes(KEY_BYTES))
    _prune(retired, now if now is not None else time.time())
    return load_or_create_key(path)


def _read_ring(path: Path) -> tuple[bytes, list[bytes]]:
    retired = _retired_dir(path)
    _prune(retired, time.time())
    old = [_read_key(p) for p in sorted(retired.glob("*.key"))] if retired.is_dir() else []
    return _read_key(path), old


def _prune(retired: Path, now: float) -> None:
    for old in retired.glob("*.key") if retired.is_dir() else ():
        if now - old.stat().st_mtime > RETIRED_FOR_SECONDS:
            old.unlink(missing_ok=True)


def _retired_dir(path: Path) -> Path:
    return path.with_name(path.name + ".retired")


def _create(path: Path, key: bytes) -> None:
    """Made once, whole: a process starting beside the one making it never reads a key half written."""
    create_private(path, key)


def _read_key(path: Path) -> bytes:
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise KeyFileError(f"{path} is readable by others (mode {mode:04o}); run chmod 600 {path}")
    key = path.read_bytes()
    if len(key) < KEY_BYTES:
        raise KeyFileError(f"{path} holds {len(key)} bytes; a signing key needs at least {KEY_BYTES}")
    return key

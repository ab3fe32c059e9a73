"""AES-256-GCM for secret values, with a key ring kept in a 0600 file: `Cipher` (domain.secrets) made concrete.

The ring file (`<data dir>/secrets.keyring`) holds every key by id and which one is current. Each ciphertext
names its key id, so `rotate_key` only adds a key and makes it current: values sealed before stay readable
under their old key, values sealed after use the new one. A running process picks a rotated ring up at its
next seal or open (it watches the file). The associated data binds a ciphertext to its one secret.
"""

from __future__ import annotations

import base64
import binascii
import fcntl
import secrets
import stat
import threading
from pathlib import Path

import msgspec
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from adapters.private_files import create_private, write_private
from domain.secrets import CipherError, Sealed

KEY_BYTES, NONCE_BYTES, TAG_BYTES = 32, 12, 16
RING_FILE = "secrets.keyring"


class KeyRingError(CipherError):
    """The ring is unusable: readable by others, malformed, or missing the key a ciphertext names."""


class SealingKeys(msgspec.Struct):
    """The keys secret values are sealed with (AES-256-GCM): every key by id, and the current one. Not the token
    signing ring (adapters/auth/keyring.KeyRing): those keys sign, live one file each, and retire by age."""

    current: str
    keys: dict[str, str]  # key id -> base64 of 32 bytes

    def key(self, key_id: str) -> bytes:
        if key_id not in self.keys:
            raise KeyRingError(f"the secret key ring has no key {key_id!r}; was the ring replaced?")
        return base64.b64decode(self.keys[key_id])


def new_key_id() -> str:
    return "k" + secrets.token_hex(4)


def load_ring(path: Path) -> SealingKeys:
    mode = path.stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise KeyRingError(f"{path} is mode {stat.S_IMODE(mode):04o}; a key ring must be 0600 (chmod 600 {path})")
    try:
        ring = msgspec.json.decode(path.read_bytes(), type=SealingKeys)
        if len(ring.key(ring.current)) != KEY_BYTES:
            raise KeyRingError(f"{path}: key {ring.current} is not {KEY_BYTES} bytes")
    except (msgspec.DecodeError, binascii.Error) as error:
        raise KeyRingError(f"{path} is not a key ring ({error})") from error
    return ring


def save_ring(path: Path, ring: SealingKeys) -> None:
    """Replaced atomically, 0600 from its first byte."""
    write_private(path, msgspec.json.encode(ring))


def load_or_create_ring(path: Path) -> SealingKeys:
    """The ring at `path`, made once: processes starting together all use the first one's key (a second key made
    at the same moment would replace it, and what was sealed with it would no longer open)."""
    if not path.exists():
        key_id = new_key_id()
        create_private(path, msgspec.json.encode(SealingKeys(current=key_id, keys={key_id: _new_key()})), dir_mode=0o700)
    return load_ring(path)


def rotate_key(path: Path) -> str:
    """A new current key; the old ones stay for what they sealed. Returns the new key id. Rotations are taken
    one at a time (a lock file beside the ring), so two at once both land and neither drops the other's key."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        ring = load_or_create_ring(path)
        key_id = new_key_id()
        save_ring(path, SealingKeys(current=key_id, keys={**ring.keys, key_id: _new_key()}))
    return key_id


def _new_key() -> str:
    return _b64(secrets.token_bytes(KEY_BYTES))


class AesGcmCipher:
    """Seals with the ring's current key, opens with whichever key a ciphertext names."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._ring = load_or_create_ring(path)
        self._stamp = self._mtime()

    def current_key(self) -> str:
        return self.ring().current

    def rotate(self) -> str:
        with self._lock:
            key_id = rotate_key(self.path)
            self._ring, self._stamp = load_ring(self.path), self._mtime()
            return key_id

    def seal(self, plaintext: bytes, context: bytes) -> Sealed:
        ring = self.ring()
        nonce = secrets.token_bytes(NONCE_BYTES)
        sealed = AESGCM(ring.key(ring.current)).encrypt(nonce, plaintext, context)  # the body, its tag appended
        return Sealed(key_id=ring.current, ciphertext=_b64(nonce + sealed))

    def open(self, sealed: Sealed, context: bytes) -> bytes:
        raw = base64.b64decode(sealed.ciphertext)
        nonce, body = raw[:NONCE_BYTES], raw[NONCE_BYTES:]
        if len(body) < TAG_BYTES:
            raise KeyRingError(f"a secret sealed with key {sealed.key_id} is too short to open: it was altered")
        try:
            return AESGCM(self.ring().key(sealed.key_id)).decrypt(nonce, body, context)
        except InvalidTag:
            raise KeyRingError(f"a secret sealed with key {sealed.key_id} does not open: it was altered or moved") \
                from None

    def ring(self) -> SealingKeys:
        """The ring as the file has it now (another process's rotation is seen without a restart)."""
        with self._lock:
            stamp = self._mtime()
            if stamp != self._stamp:
                self._ring, self._stamp = load_ring(self.path), stamp
            return self._ring

    def _mtime(self) -> int:
        return self.path.stat().st_mtime_ns


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()

"""What a secret is allowed to be: its scopes, name pattern and size cap, its sealed form, and the Cipher port.

Values never live in the domain as plain text beyond one call: the application seals a value with the
`Cipher` it is given (an adapter) before any event is raised, and opens it only to hand it to a job.
"""

from __future__ import annotations

import enum
import re
from typing import Protocol

import msgspec

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
MAX_NAME = 63
MAX_VALUE_BYTES = 64 * 1024


class Scope(str, enum.Enum):
    USER = "user"
    GROUP = "group"
    ORGANIZATION = "organization"
    CLUSTER = "cluster"  # cluster admins' own secrets: managed and read by cluster admins only


class SecretError(ValueError):
    """A secret command refused; `field` names what was wrong and `reason` says why (never the value)."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field, self.reason = field, reason


class CipherError(Exception):
    """The Cipher port's refusal: a ciphertext that does not open (its key is gone, or it was altered)."""


class Sealed(msgspec.Struct, frozen=True):
    """A value as it is stored: which key sealed it and the ciphertext (base64 of nonce, ciphertext, tag)."""

    key_id: str
    ciphertext: str


class Cipher(Protocol):
    """Authenticated encryption with a key ring; `context` binds a ciphertext to the one secret it belongs to."""

    def current_key(self) -> str:
        """The id of the key `seal` uses now."""
        ...

    def rotate(self) -> str:
        """A new current key (the old ones stay, to open what they sealed); returns its id."""
        ...

    def seal(self, plaintext: bytes, context: bytes) -> Sealed: ...

    def open(self, sealed: Sealed, context: bytes) -> bytes:
        """The plaintext, or CipherError (never naming the value)."""
        ...


def check_name(name: str, field: str = "name") -> str:
    if not name or len(name) > MAX_NAME:
        raise SecretError(field, f"a secret name is 1 to {MAX_NAME} characters (got {len(name)})")
    if not NAME.match(name):
        raise SecretError(field, f"secret name {name!r} may hold only letters, digits, '_', '-' and '.', "
                                 "starting with a letter or digit")
    return name


def check_value(value: str) -> bytes:
    """The value's bytes; the reason never quotes it."""
    data = value.encode()
    if not data:
        raise SecretError("value", "a secret value must not be empty")
    if len(data) > MAX_VALUE_BYTES:
        raise SecretError("value", f"a secret value is at most {MAX_VALUE_BYTES} bytes (got {len(data)})")
    return data


def check_scope(scope: str) -> Scope:
    try:
        return Scope(scope)
    except ValueError:
        allowed = " | ".join(s.value for s in Scope)
        raise SecretError("scope", f"scope must be {allowed} (got {scope!r})") from None

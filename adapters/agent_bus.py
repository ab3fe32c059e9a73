"""The agent bus's sealing: per-node keys, subjects, and AES-256-GCM envelopes for what travels between the control
plane and one node's agent over NATS.

Every agent shares one NATS user (adapters/nats_auth.py), so NATS permissions cannot keep node A's run specs
(which carry resolved secrets) from node B's agent: the seal does. A node's key is derived from the control
plane's signing key, the node id and its registration epoch (HMAC-SHA256), so every control-plane process
derives the same key without storing or sharing one, a new registration gets a new key, and the agent learns it
only from its authenticated registration or heartbeat answer. The subject (with the epoch) is the associated
data, so a message sealed for node A, or for an earlier epoch, never opens as node B's or as the current one.

The cipher is `cryptography`'s AESGCM (OpenSSL): about 1 us a message here, against 41 us for pycryptodome's
`AES.new(..., MODE_GCM)`, which builds its GHASH tables for every message (6.8% of an agent's busy samples, a seal
and an open per report batch and an open per push). The envelope is the same bytes either way (standard GCM, the
tag after the ciphertext), so agents and control planes of either kind still talk.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from uuid import UUID

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

KEY_BYTES, NONCE_BYTES, TAG_BYTES = 32, 12, 16
VERSION = b"\x01"
LABEL = b"roving-agent-bus/v1\x00"


class Unsealed(ValueError):
    """A message that does not open: another node's, another epoch's, tampered with, or not an envelope."""


def node_key(secret: bytes, node: UUID | str, epoch: int) -> bytes:
    """The key of `node` at `epoch` (a new registration, a new key)."""
    return hmac.new(bytes(secret), LABEL + UUID(str(node)).bytes + epoch.to_bytes(8, "big"), hashlib.sha256).digest()


def key_text(key: bytes) -> str:
    return base64.b64encode(key).decode()


def key_of_text(text: str) -> bytes | None:
    """The key an answer carried; None when it carried none (an older control plane) or one that is not a key."""
    try:
        key = base64.b64decode(text, validate=True)
    except ValueError:
        return None
    return key if len(key) == KEY_BYTES else None


def starts_subject(cluster: str, node: UUID | str) -> str:
    """Where the control plane pushes a node's assignments."""
    return f"roving_agents.{cluster}.node.{node}"


def reports_subject(cluster: str, node: UUID | str) -> str:
    """Where a node's agent sends its batches of reports (a request: the answer comes to its inbox)."""
    return f"roving_agents.{cluster}.reports.{node}"


def seal(key: bytes, epoch: int, subject: str, plain: bytes) -> bytes:
    """VERSION, the epoch (8 bytes), a fresh nonce, the ciphertext and its tag; bound to `subject` and the epoch."""
    header = VERSION + epoch.to_bytes(8, "big")
    nonce = secrets.token_bytes(NONCE_BYTES)
    return header + nonce + AESGCM(key).encrypt(nonce, plain, header + subject.encode())  # the tag comes last


def epoch_of(message: bytes) -> int:
    """The epoch an envelope names (not yet trusted: only opening it with that epoch's key proves it)."""
    if len(message) < 9 + NONCE_BYTES + TAG_BYTES or message[:1] != VERSION:
        raise Unsealed("not an agent bus envelope")
    return int.from_bytes(message[1:9], "big")


def open_sealed(key: bytes, subject: str, message: bytes) -> bytes:
    """The plain bytes of an envelope sealed with `key` for `subject`; Unsealed otherwise."""
    epoch_of(message)
    header, nonce, rest = message[:9], message[9:9 + NONCE_BYTES], message[9 + NONCE_BYTES:]
    try:
        return AESGCM(key).decrypt(nonce, rest, header + subject.encode())
    except (InvalidTag, ValueError):  # ValueError: a key of the wrong size
        raise Unsealed("the envelope does not open with this node's key at this epoch") from None

"""The secret store as the composition root builds it: the handlers over the application's unit of work, with
the AES-GCM key ring in the data directory (`<data dir>/secrets.keyring`, 0600).

Where the ciphertext lives: in the event log, on `SecretShelf` aggregates (domain.secrets.shelf). Their events
carry names, who and when, a key id and the ciphertext, so secrets get what every other aggregate has, with no
second store to keep consistent: optimistic concurrency, atomic saves, the audit trail (the ciphertext field is
redacted there) and replay. The key never enters the log; a log copied elsewhere (federation, a backup) holds
only ciphertext bound to its secret.
"""

from __future__ import annotations

from pathlib import Path

from adapters.secret_crypto import RING_FILE, AesGcmCipher, rotate_key
from domain.app.secrets import SecretHandlers
from domain.app.unit_of_work import UnitOfWork


def open_secret_store(uow: UnitOfWork, data_dir: Path | str) -> SecretHandlers:
    """The secret handlers for one control plane; the key ring is made on first use."""
    return SecretHandlers(uow, AesGcmCipher(Path(data_dir) / RING_FILE))


def rotate_secret_key(data_dir: Path | str) -> str:
    """A new current key in the data directory's ring (new values use it; old ones keep opening)."""
    return rotate_key(Path(data_dir) / RING_FILE)

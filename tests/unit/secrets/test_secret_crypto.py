"""The key ring and AES-GCM: sealed values open only for their own secret, rotation keeps old values readable."""

from __future__ import annotations

import os
import stat

import pytest

from adapters.secret_crypto import RING_FILE, AesGcmCipher, KeyRingError, rotate_key
from domain.secrets import Sealed

VALUE = b"s3cr3t-value"


def test_the_ring_is_made_owner_only_and_the_ciphertext_hides_the_value(tmp_path):
    cipher = AesGcmCipher(tmp_path / RING_FILE)
    sealed = cipher.seal(VALUE, b"secret-1")
    assert stat.S_IMODE((tmp_path / RING_FILE).stat().st_mode) == 0o600
    assert VALUE not in sealed.ciphertext.encode() and VALUE.hex() not in sealed.ciphertext
    assert cipher.open(sealed, b"secret-1") == VALUE


def test_a_ciphertext_moved_to_another_secret_does_not_open(tmp_path):
    cipher = AesGcmCipher(tmp_path / RING_FILE)
    sealed = cipher.seal(VALUE, b"secret-1")
    with pytest.raises(KeyRingError, match="altered or moved"):
        cipher.open(sealed, b"secret-2")


def test_rotation_seals_new_values_with_a_new_key_and_old_ones_still_open(tmp_path):
    cipher = AesGcmCipher(tmp_path / RING_FILE)
    old = cipher.seal(VALUE, b"a")
    os.utime(tmp_path / RING_FILE, ns=(1, 1))  # mtime granularity: make the rewrite visible as a change
    new_id = rotate_key(tmp_path / RING_FILE)
    new = cipher.seal(b"other", b"b")
    assert (old.key_id != new_id, new.key_id) == (True, new_id)
    assert cipher.open(old, b"a") == VALUE and cipher.open(new, b"b") == b"other"
    assert stat.S_IMODE((tmp_path / RING_FILE).stat().st_mode) == 0o600


def test_a_ring_others_can_read_is_refused(tmp_path):
    AesGcmCipher(tmp_path / RING_FILE)
    (tmp_path / RING_FILE).chmod(0o644)
    with pytest.raises(KeyRingError, match="0600"):
        AesGcmCipher(tmp_path / RING_FILE)


def test_a_key_id_the_ring_lacks_is_named(tmp_path):
    cipher = AesGcmCipher(tmp_path / RING_FILE)
    with pytest.raises(KeyRingError, match="kmissing"):
        cipher.open(Sealed("kmissing", "AAAA"), b"a")


def test_a_value_sealed_before_the_cipher_moved_to_openssl_still_opens(tmp_path):
    """Sealed by pycryptodome's AES-GCM under a ring's key (nonce, body, tag), recorded then: the same bytes open."""
    (tmp_path / RING_FILE).write_text('{"current": "kold", "keys": {"kold": "' + "c3Nz" * 10 + 'c3M="}}')
    os.chmod(tmp_path / RING_FILE, 0o600)
    old = Sealed(key_id="kold", ciphertext="bW1tbW1tbW1tbW1t87WQgbSWsCQRPi1u3ibOJTDJ3f5pG6I=")
    assert AesGcmCipher(tmp_path / RING_FILE).open(old, b"org/secret-name") == b"hunter2"
    with pytest.raises(KeyRingError):
        AesGcmCipher(tmp_path / RING_FILE).open(old, b"org/another-secret")

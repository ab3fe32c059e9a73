"""The key ring: every token names its key; a rotation signs with a new key and keeps old tokens valid until they expire."""

import base64
import hashlib
import hmac
import os
import time
from datetime import timedelta

import msgspec
import pytest

from adapters.auth import keyring
from adapters.auth.keyring import key_id, load_or_create_key, rotate_key
from adapters.auth.tokens import Identity, InvalidToken, issue, issue_webhook, verify, verify_webhook
from domain.tenancy import Role

from .builders import ACME, BOB, T0, at

BOB_ID = Identity(BOB, "bob", Role.USER, ACME)
HOUR = timedelta(hours=1)


def claims_of(token: str) -> dict:
    part = token.split(".")[1]
    return msgspec.json.decode(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def test_every_token_names_the_key_that_signed_it(tmp_path):
    ring = load_or_create_key(tmp_path / "signing.key")
    assert claims_of(issue(BOB_ID, ring, HOUR, T0))["kid"] == ring.kid == key_id(bytes(ring))


def test_a_rotation_signs_with_a_new_key_and_old_tokens_stay_valid_until_they_expire(tmp_path):
    path = tmp_path / "signing.key"
    before = load_or_create_key(path)
    webhook, access = issue_webhook("alertmanager", before, T0), issue(BOB_ID, before, HOUR, T0)
    after = rotate_key(path)
    assert after.kid != before.kid and bytes(after) != bytes(before)
    assert verify_webhook(webhook, after, at(60 * 24 * 300)).username == "alertmanager"
    assert verify(access, after, at(30)).username == "bob"
    with pytest.raises(InvalidToken, match="expired"):
        verify(access, after, at(61))
    assert claims_of(issue(BOB_ID, after, HOUR, T0))["kid"] == after.kid
    assert stat_mode(path.with_name("signing.key.retired") / f"{before.kid}.key") == 0o600


def test_a_process_that_started_before_a_rotation_verifies_tokens_of_the_new_key(tmp_path, monkeypatch):
    path = tmp_path / "signing.key"
    running = load_or_create_key(path)
    newer = rotate_key(path)
    monkeypatch.setattr(keyring, "REREAD_SECONDS", -1.0)  # read the files again at once
    assert verify(issue(BOB_ID, newer, HOUR, T0), running, at(1)).username == "bob"


def test_a_key_retired_longer_than_any_token_lives_is_dropped(tmp_path):
    path = tmp_path / "signing.key"
    old = load_or_create_key(path)
    rotate_key(path)
    retired = path.with_name("signing.key.retired") / f"{old.kid}.key"
    long_ago = time.time() - keyring.RETIRED_FOR_SECONDS - 60
    os.utime(retired, (long_ago, long_ago))
    ring = load_or_create_key(path)
    assert not retired.exists()
    with pytest.raises(InvalidToken, match="bad signature"):
        verify(issue(BOB_ID, old, HOUR, T0), ring, at(1))


def test_a_token_from_before_the_key_ring_still_verifies(tmp_path):
    ring = load_or_create_key(tmp_path / "signing.key")
    legacy = {"sub": str(BOB), "username": "bob", "role": "user", "org": str(ACME), "groups": [], "source": "admin",
              "kind": "access", "iat": int(T0.timestamp()), "exp": int(T0.timestamp()) + 3600, "jti": "old"}
    body = "rv1." + b64(msgspec.json.encode(legacy))
    token = body + "." + b64(hmac.new(bytes(ring), body.encode(), hashlib.sha256).digest())
    assert verify(token, ring, at(1)).jti == "old"


def test_a_token_naming_another_key_than_the_one_that_signed_it_is_refused():
    signer, other = b"s" * 32, b"o" * 32
    claims = claims_of(issue(BOB_ID, signer, HOUR, T0))
    body = "rv1." + b64(msgspec.json.encode({**claims, "kid": key_id(other)}))
    token = body + "." + b64(hmac.new(signer, body.encode(), hashlib.sha256).digest())
    with pytest.raises(InvalidToken, match="another key"):
        verify(token, signer, at(1))


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def stat_mode(path) -> int:
    return path.stat().st_mode & 0o777


def test_the_rotate_command_names_the_new_key_and_refuses_a_missing_data_dir(tmp_path, capsys):
    from api.cli.rotate_key import rotate_main

    old = load_or_create_key(tmp_path / "signing.key")
    assert rotate_main([str(tmp_path)]) == 0
    new = load_or_create_key(tmp_path / "signing.key")
    assert new.kid in capsys.readouterr().out and new.kid != old.kid
    assert rotate_main([str(tmp_path / "nowhere")]) == 2

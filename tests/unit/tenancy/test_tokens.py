"""Signed bearer tokens: round trip, tampering, expiry, malformed input, webhook kind, key file."""

import base64
import json
import stat
from datetime import timedelta

import pytest

from adapters.auth.tokens import (
    Identity,
    InvalidToken,
    KeyFileError,
    issue,
    issue_webhook,
    load_or_create_key,
    verify,
    verify_webhook,
)
from domain.tenancy import Action, Resource, Role, Source, can

from .builders import ACME, BOB, T0, TRAINING, at

KEY = b"k" * 32
BOB_ID = Identity(BOB, "bob", Role.USER, ACME, [TRAINING])
HOUR = timedelta(hours=1)


def reason(token, key=KEY, now=T0, **kwargs):
    with pytest.raises(InvalidToken) as refused:
        verify(token, key, now, **kwargs)
    return refused.value.reason


def test_a_token_verifies_to_the_claims_it_was_issued_with():
    claims = verify(issue(BOB_ID, KEY, HOUR, T0, token_id="t-1"), KEY, at(59))
    assert (claims.sub, claims.username, claims.role, claims.org, claims.groups) == (BOB, "bob", Role.USER, ACME, [TRAINING])
    assert (claims.iat, claims.exp - claims.iat, claims.jti) == (int(T0.timestamp()), 3600, "t-1")


def test_the_verified_principal_sees_its_groups_workflows():
    principal = verify(issue(BOB_ID, KEY, HOUR, T0), KEY, T0).principal()
    assert can(principal, Action.VIEW_WORKFLOW, Resource.workflow(ACME, TRAINING, BOB)).allowed


def test_a_token_is_refused_from_its_expiry_on():
    token = issue(BOB_ID, KEY, HOUR, T0)
    assert reason(token, now=at(60)) == "expired"


def test_a_changed_payload_fails_the_signature_check():
    prefix, payload, signature = issue(BOB_ID, KEY, HOUR, T0).split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
    claims["role"] = "cluster_admin"
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    assert reason(f"{prefix}.{forged}.{signature}") == "bad signature"


def test_a_token_signed_with_another_key_is_refused():
    assert reason(issue(BOB_ID, b"x" * 32, HOUR, T0)) == "bad signature"


@pytest.mark.parametrize("token", ["", "rv1.abc", "jwt.a.b", "rv1.a.b.c", "rv1.!!.@@"])
def test_garbage_is_malformed(token):
    assert reason(token) == "malformed"


def test_a_webhook_token_is_long_lived_for_the_monitoring_principal_but_not_a_login():
    token = issue_webhook("alertmanager", KEY, T0)
    principal = verify_webhook(token, KEY, T0 + timedelta(days=300)).principal()
    assert (principal.username, principal.source, principal.user_id) == ("alertmanager", Source.MONITORING, None)
    assert reason(token) == "wrong kind"


def test_an_access_token_is_not_a_webhook_token():
    with pytest.raises(InvalidToken, match="wrong kind"):
        verify_webhook(issue(BOB_ID, KEY, HOUR, T0), KEY, T0)


def test_the_key_file_is_created_once_with_owner_only_access(tmp_path):
    path = tmp_path / "token.key"
    key = load_or_create_key(path)
    assert len(key) == 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_or_create_key(path) == key


def test_a_key_file_readable_by_others_is_refused(tmp_path):
    path = tmp_path / "token.key"
    load_or_create_key(path)
    path.chmod(0o644)
    with pytest.raises(KeyFileError, match="readable by others"):
        load_or_create_key(path)


def test_a_short_key_file_is_refused(tmp_path):
    path = tmp_path / "token.key"
    path.write_bytes(b"short")
    path.chmod(0o600)
    with pytest.raises(KeyFileError, match="needs at least 32"):
        load_or_create_key(path)


def test_a_correctly_signed_token_with_missing_claims_is_malformed():
    import hashlib
    import hmac
    payload = base64.urlsafe_b64encode(b'{"sub":null}').rstrip(b"=").decode()
    body = f"rv1.{payload}"
    signature = base64.urlsafe_b64encode(hmac.new(KEY, body.encode(), hashlib.sha256).digest()).rstrip(b"=").decode()
    assert reason(f"{body}.{signature}") == "malformed"

"""Registry credentials from an image secret's value, and the auth file skopeo reads them from."""

from __future__ import annotations

import base64
import json
import stat

import pytest

from adapters.registry_auth import Credential, CredentialError, auth_file, parse_credential, source_auth


@pytest.mark.parametrize(("value", "expected"), [
    ("robot:pa:ss", Credential(username="robot", password="pa:ss")),
    ('{"username": "robot", "password": "pw"}', Credential(username="robot", password="pw")),
    ('{"token": "ghp_abc"}', Credential(token="ghp_abc")),
    ("ghp_abc\n", Credential(token="ghp_abc")),
])
def test_the_secret_may_be_user_password_json_or_a_token(value, expected):
    assert parse_credential(value) == expected


@pytest.mark.parametrize("value", ["", ":only-a-password", "user:", '{"username": "u"}', "{not json", "[1, 2]"])
def test_a_value_that_is_no_credential_is_refused_naming_the_field_and_never_the_value(value):
    with pytest.raises(CredentialError, match=r"^image\.secret: ") as refused:
        parse_credential(value)
    assert value.strip() == "" or value not in str(refused.value)


def test_a_credential_never_shows_its_password_or_token_in_its_repr():
    assert "pw" not in repr(Credential(username="robot", password="pw"))
    assert "ghp_abc" not in repr(Credential(token="ghp_abc"))


def test_the_auth_file_is_private_to_the_agent_holds_the_registry_entry_and_is_removed_after():
    with auth_file(parse_credential("robot:pw"), "127.0.0.1:5000") as path:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        entry = json.loads(path.read_text())["auths"]["127.0.0.1:5000"]
        assert base64.b64decode(entry["auth"]).decode() == "robot:pw"
        assert source_auth(path) == [f"--src-authfile={path}"]
    assert not path.exists() and not path.parent.exists()


def test_a_token_is_written_as_an_identity_token():
    with auth_file(parse_credential('{"token": "ghp_abc"}'), "ghcr.io") as path:
        assert json.loads(path.read_text()) == {"auths": {"ghcr.io": {"identitytoken": "ghp_abc"}}}


def test_without_a_credential_there_is_no_auth_file_and_a_check_is_anonymous():
    with auth_file(None, "ghcr.io") as path:
        assert path is None
    assert source_auth(None) == [] and source_auth(None, anonymous=True) == ["--src-no-creds"]

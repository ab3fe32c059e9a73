"""A site's own NATS: the control plane's credentials come from ROVING_NATS_CREDS or a user and password."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.nats_auth import without_credentials
from api.composition.settings import SettingsError, load_settings

URL = "nats://n1.example:4222,nats://n2.example:4222"


def creds_file(tmp_path: Path, text: str = "user: roving-control\npassword: s3cret\n") -> str:
    path = tmp_path / "control.creds"
    path.write_text(text)
    return str(path)


def test_a_creds_file_puts_the_control_planes_user_into_every_server_url(tmp_path: Path) -> None:
    settings = load_settings({"ROVING_NATS_URL": URL, "ROVING_NATS_CREDS": creds_file(tmp_path)})
    assert settings.nats_url == "nats://roving-control:s3cret@n1.example:4222,nats://roving-control:s3cret@n2.example:4222"
    assert without_credentials(settings.nats_url) == URL


def test_a_user_and_password_go_together(tmp_path: Path) -> None:
    settings = load_settings({"ROVING_NATS_URL": URL, "ROVING_NATS_USER": "cp", "ROVING_NATS_PASSWORD": "p@ss:word"})
    assert settings.nats_url.startswith("nats://cp:p%40ss%3Aword@n1.example:4222,")
    with pytest.raises(SettingsError, match="ROVING_NATS_PASSWORD go together"):
        load_settings({"ROVING_NATS_URL": URL, "ROVING_NATS_USER": "cp"})


@pytest.mark.parametrize("text", ["password: only\n", "-----BEGIN NATS USER JWT-----\neyJ0\n"])
def test_an_unreadable_creds_file_is_named_with_the_format_it_wants(tmp_path: Path, text: str) -> None:
    with pytest.raises(SettingsError, match="ROVING_NATS_CREDS: .*`user: NAME` and `password: SECRET`"):
        load_settings({"ROVING_NATS_URL": URL, "ROVING_NATS_CREDS": creds_file(tmp_path, text)})


def test_credentials_without_a_url_are_refused_and_missing_files_are_named(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="need ROVING_NATS_URL"):
        load_settings({"ROVING_NATS_CREDS": creds_file(tmp_path)})
    with pytest.raises(SettingsError, match="ROVING_NATS_AGENT_CREDS=.* is not a file"):
        load_settings({"ROVING_NATS_AGENT_CREDS": str(tmp_path / "missing.creds")})


def test_a_sites_own_ca_makes_every_server_url_tls_trusting_it(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    settings = load_settings({"ROVING_NATS_URL": URL, "ROVING_NATS_CREDS": creds_file(tmp_path),
                              "ROVING_NATS_TLS_CA": str(ca)})
    first, second = settings.nats_url.split(",")
    assert first == f"tls://roving-control:s3cret@n1.example:4222?ca={str(ca).replace('/', '%2F')}"
    assert second.startswith("tls://roving-control:s3cret@n2.example:4222?ca=")
    with pytest.raises(SettingsError, match="ROVING_NATS_TLS_KEY go together"):
        load_settings({"ROVING_NATS_URL": URL, "ROVING_NATS_TLS_CERT": str(ca)})

"""The API's edge on a real socket: https with HSTS from ROVING_TLS_CERT/KEY, and read timeouts that cut off a
client sending its headers or its body too slowly."""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
from pathlib import Path

import httpx
import pytest

from api.composition.settings import SettingsError, load_settings
from tests.unit.api.harness import Api
from tests.unit.api.served import serving, trickle


@pytest.fixture(scope="module")
def certificate(tmp_path_factory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1, made by the openssl command (Debian's `openssl` package)."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is needed to make a test certificate (apt-get install openssl)")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=roving-test",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    return cert, key


def test_with_a_certificate_the_api_serves_https_and_answers_carry_hsts(certificate):
    cert, key = certificate
    env = {"ROVING_TLS_CERT": str(cert), "ROVING_TLS_KEY": str(key)}

    async def scenario():
        async with serving(Api().app, env) as port:
            trusting = ssl.create_default_context(cafile=str(cert))
            async with httpx.AsyncClient(verify=trusting) as client:
                answer = await client.get(f"https://127.0.0.1:{port}/healthz")
            async with httpx.AsyncClient() as client:
                with pytest.raises(httpx.HTTPError):  # plain http to the TLS port gets no answer
                    await client.get(f"http://127.0.0.1:{port}/healthz")
            return answer

    answer = asyncio.run(scenario())
    assert answer.status_code == 200
    assert answer.headers["strict-transport-security"] == "max-age=63072000; includeSubDomains"


def test_plain_http_answers_carry_no_hsts():
    async def scenario():
        async with serving(Api().app) as port, httpx.AsyncClient() as client:
            return await client.get(f"http://127.0.0.1:{port}/healthz")
    assert "strict-transport-security" not in asyncio.run(scenario()).headers


def test_a_tls_setting_that_cannot_be_used_is_named(certificate, tmp_path):
    cert, key = certificate
    with pytest.raises(SettingsError, match="ROVING_TLS_CERT and ROVING_TLS_KEY go together"):
        load_settings({"ROVING_TLS_CERT": str(cert)})
    with pytest.raises(SettingsError, match="ROVING_TLS_KEY='/nowhere/key.pem' is not a file"):
        load_settings({"ROVING_TLS_CERT": str(cert), "ROVING_TLS_KEY": "/nowhere/key.pem"})
    (tmp_path / "junk.pem").write_text("not a key")
    with pytest.raises(SettingsError, match="ROVING_TLS_CERT=.* do not load as a PEM certificate"):
        load_settings({"ROVING_TLS_CERT": str(cert), "ROVING_TLS_KEY": str(tmp_path / "junk.pem")})


def test_a_client_sending_its_headers_too_slowly_is_cut_off_with_408():
    env = {"ROVING_HEADER_TIMEOUT": "1s"}

    async def scenario():
        async with serving(Api().app, env) as port:
            slow = await trickle(port, b"GET /healthz HTTP/1.1\r\n", b"X-Slow: " + b"a" * 100, 0.2, 10)
            fine = await trickle(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", b"", 0.2, 5)
            return slow, fine

    (slow, seconds), (fine, _) = asyncio.run(scenario())
    assert slow.startswith(b"HTTP/1.1 408") and b"ROVING_HEADER_TIMEOUT" in slow
    assert 0.9 < seconds < 3  # while a byte arrived every 0.2 s: pace alone never keeps a connection open
    assert fine.startswith(b"HTTP/1.1 200")


def test_a_client_sending_its_body_too_slowly_is_cut_off_with_408():
    env = {"ROVING_BODY_TIMEOUT": "1s"}
    api = Api(env)
    head = (f"POST /v4/workflows HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {api.admin}\r\n"
            "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{").encode()

    async def scenario():
        async with serving(api.app, env) as port:
            return await trickle(port, head, b"", 0.2, 10)

    answer, seconds = asyncio.run(scenario())
    assert answer.startswith(b"HTTP/1.1 408") and b"ROVING_BODY_TIMEOUT" in answer
    assert b"connection: close" in answer.lower() and seconds < 5


@pytest.mark.parametrize("name", ["ROVING_HEADER_TIMEOUT", "ROVING_BODY_TIMEOUT"])
def test_a_timeout_that_is_not_a_duration_is_named(name):
    with pytest.raises(SettingsError, match=f"^{name}='never'"):
        load_settings({name: "never"})


def test_roving_up_help_lists_the_edge_settings():
    from api.up.main import UP_HELP

    names = ["ROVING_TLS_CERT", "ROVING_TLS_KEY", "ROVING_HEADER_TIMEOUT", "ROVING_BODY_TIMEOUT",
             "ROVING_TRUSTED_PROXIES", "ROVING_MAX_BODY_BYTES"]
    assert [name for name in names if name not in UP_HELP] == []

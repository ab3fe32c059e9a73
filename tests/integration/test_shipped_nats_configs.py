"""The shipped nats-server configs (ops/nats) are valid, and a server run from single.conf refuses anonymous and
plain-text clients, and clients without a user, while a control plane given ROVING_NATS_CREDS and ROVING_NATS_TLS_CA uses it."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adapters.nats_server import find_binary, free_port
from adapters.nats_tls import with_tls
from api.composition.settings import load_settings
from tests.integration.ledger import Ledgers, env_for
from tests.nats_connect import connect_refusal

OPS = Path(__file__).resolve().parents[2] / "ops" / "nats"
CONFIGS = sorted(OPS.glob("*.conf"))


def site(tmp_path: Path) -> Path:
    """The files make_site.py writes, and the shipped configs beside them, pointed at this directory."""
    directory = tmp_path / "site"
    subprocess.run([sys.executable, str(OPS / "make_site.py"), str(directory), "--cluster", "local",
                    "--host", "127.0.0.1", "--client", "c1"], check=True, capture_output=True)
    member = {"hub-ca.pem": "tls/ca.pem", "hub-client.pem": "tls/c1.pem", "hub-client-key.pem": "tls/c1-key.pem"}
    for config in CONFIGS:
        text = config.read_text()
        for name, made in member.items():
            text = text.replace(f"/etc/roving/nats/{name}", str(directory / made))
        text = re.sub(r"/etc/roving/(nats|hub)", str(directory), text).replace("/var/lib/roving", str(tmp_path / "store"))
        (directory / config.name).write_text(text)
    return directory


def test_every_shipped_config_is_valid_and_asks_for_users_tls_and_an_encrypted_store(tmp_path: Path) -> None:
    directory = site(tmp_path)
    assert [c.name for c in CONFIGS] == ["cluster-node1.conf", "federation-hub.conf", "federation-member-c1.conf",
                                         "federation-member-c2.conf", "single.conf"]
    for config in CONFIGS:
        text = config.read_text()
        assert 'include "users.conf"' in text and "tls {" in text and "cipher: chachapoly" in text, config.name
        checked = subprocess.run([find_binary(), "-t", "-c", str(directory / config.name)], capture_output=True,
                                 text=True)
        assert checked.returncode == 0, f"{config.name}: {checked.stderr or checked.stdout}"


@pytest.fixture
def single(tmp_path: Path):
    directory = site(tmp_path)
    port = free_port()
    config = directory / "single.conf"
    config.write_text(config.read_text().replace("127.0.0.1:4222", f"127.0.0.1:{port}"))
    log = tmp_path / "nats.log"
    process = subprocess.Popen([find_binary(), "-c", str(config), "-l", str(log)])
    deadline = time.monotonic() + 15
    while "Server is ready" not in (log.read_text() if log.exists() else ""):
        assert process.poll() is None and time.monotonic() < deadline, log.read_text() if log.exists() else ""
        time.sleep(0.05)
    yield directory, port
    process.terminate()
    process.wait(10)


def test_a_control_plane_with_the_sites_credentials_and_ca_uses_single_conf(single, tmp_path: Path) -> None:
    directory, port = single
    settings = load_settings({"ROVING_NATS_URL": f"nats://127.0.0.1:{port}",
                              "ROVING_NATS_CREDS": str(directory / "credentials" / "control.creds"),
                              "ROVING_NATS_TLS_CA": str(directory / "tls" / "ca.pem")})
    app = Ledgers(env=env_for(settings.nats_url, "local"))
    try:
        ledger_id = app.open_with_entries(2)
        app.save(app.repository.get(ledger_id))
        assert app.repository.get(ledger_id).entries == [0, 1]
    finally:
        app.close()

    assert "CERTIFICATE_VERIFY_FAILED" in asyncio.run(connect_refusal(f"nats://127.0.0.1:{port}"))
    trusting = with_tls(f"nats://127.0.0.1:{port}", directory / "tls" / "ca.pem")
    assert "Authorization Violation" in asyncio.run(connect_refusal(trusting))

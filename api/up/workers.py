"""API workers: several control-plane processes serving one port (ROVING_API_WORKERS), kept by their parent.

Each worker builds the whole control plane (the application, views following the log, a scheduler runner, the
HTTP app) and listens on the same address with SO_REUSEPORT, so the kernel spreads connections across them.
Commands stay correct through the log's optimistic concurrency (a lost race reloads and decides again); the
scheduler's leader lease lets one runner lead, and the audit feed follows that lease; answers carry the log
position they reflect (`Roving-Position`), so a read landing on another worker can wait for a write.
The parent (`roving up`, `roving api`) holds the port, keeps the workers with the local agents' keeper
(a dead one is started again) and stops them together.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import structlog

from api.up.local_agents import LocalAgents

log = structlog.get_logger("roving.workers")
WORKER_START = "import sys; from api.up.workers import worker_main; sys.exit(worker_main(sys.argv[1:]))"
CATCH_UP_SECONDS = 300.0  # a worker takes connections only once its views have caught up with the log
BACKLOG = 2048


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to host:port that others of the same user may bind too (SO_REUSEPORT)."""
    bare = host.strip("[]")
    sock = socket.socket(socket.AF_INET6 if ":" in bare else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((bare, port))
    except OSError:
        sock.close()
        raise
    return sock


def log_level() -> int:
    """ROVING_LOG_LEVEL (debug, info, warning, error; default info): a benchmark turns the access log off."""
    return logging.getLevelNamesMapping().get(os.environ.get("ROVING_LOG_LEVEL", "").strip().upper(), logging.INFO)


def ready_file(data_dir: Path, index: int) -> Path:
    return Path(data_dir) / "run" / f"api-{index}.ready"


class Workers:
    """`count` worker processes on the settings' port, started again when one dies, stopped together.

    The parent binds the port first (without listening: a bound socket takes no connections), so a port in use is
    reported at once, and no other program can take it while a worker restarts."""

    def __init__(self, settings, nats_url: str, preexec: Callable[[], None] | None = None) -> None:
        self.settings, self.nats_url, self.count = settings, nats_url, settings.api_workers
        self.data_dir = Path(settings.data_dir)
        self.reserved = listening_socket(settings.host, settings.port)
        self.port = self.reserved.getsockname()[1]
        self.keeper = LocalAgents(preexec=preexec, kind="worker")

    def start(self) -> Workers:
        run = self.data_dir / "run"
        run.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "ROVING_LISTEN": f"{self.settings.host}:{self.port}", "ROVING_API_WORKERS": str(self.count)}
        if not self.settings.nats_url:  # the embedded server; a site's URL, credentials and TLS reach them as given
            env["ROVING_NATS_URL"] = self.nats_url
        for index in range(1, self.count + 1):
            ready_file(self.data_dir, index).unlink(missing_ok=True)
            argv = [sys.executable, "-c", WORKER_START, "--index", str(index)]
            self.keeper.add(f"api-{index}", argv, None, env=env)
        return self

    @property
    def pids(self) -> list[int]:
        return [process.pid for process in self.keeper.processes]

    def wait_ready(self, at_least: int | None = None, timeout: float = CATCH_UP_SECONDS) -> None:
        """Until `at_least` workers (default all) serve; RuntimeError when one exits first (its reason is in the
        parent's output)."""
        deadline, wanted = time.monotonic() + timeout, at_least or self.count
        while sum(ready_file(self.data_dir, i).exists() for i in range(1, self.count + 1)) < wanted:
            exited = [p for p in self.keeper.processes if p.poll() is not None]
            if exited:
                raise RuntimeError(f"an API worker exited while starting (exit code {exited[0].returncode})")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the API workers did not start within {timeout:.0f}s")
            time.sleep(0.05)

    def stop(self, grace: float = 15.0) -> None:
        self.keeper.stop(grace)
        self.reserved.close()


def worker_main(argv: list[str]) -> int:
    """One API worker: the control plane against ROVING_NATS_URL, serving ROVING_LISTEN with SO_REUSEPORT."""
    from api.composition.settings import Settings, SettingsError
    from api.composition.stack import Stack
    from api.logs import configure_logging

    parser = argparse.ArgumentParser(prog="roving-api-worker")
    parser.add_argument("--index", type=int, default=1)
    args = parser.parse_args(argv)
    try:
        settings = Settings.from_env()
    except SettingsError as error:
        print(f"roving: {error}", file=sys.stderr)
        return 2
    configure_logging(os.environ.get("ROVING_LOG_FORMAT", ""), log_level())
    structlog.contextvars.bind_contextvars(worker=args.index)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    threading.Thread(target=_orphaned, args=(os.getppid(),), daemon=True, name="roving-parent-watch").start()
    private = listening_socket(settings.host, 0)  # this worker alone: where the others forward audit reads
    stack = Stack(settings, embedded_nats=False, audit="lease", internal_url=internal_url(settings, private))
    try:
        tailer = stack.start().tailer
        if tailer is not None and not tailer.caught_up.wait(CATCH_UP_SECONDS):  # (start() made it)
            log.warning("workers.serving_before_caught_up", worker=args.index)
        shared = listening_socket(settings.host, settings.port)
        threading.Thread(target=_announce, args=(stack, ready_file(settings.data_dir, args.index)), daemon=True,
                         name="roving-ready").start()
        stack.serve(sockets=[shared, private])
    finally:
        stack.stop()
    return 0


def internal_url(settings, private: socket.socket) -> str:
    """The private listener's URL as other workers (or hosts, for a wildcard address) reach it."""
    host, port = settings.host.strip("[]"), private.getsockname()[1]
    if host in ("0.0.0.0", "::", ""):
        host = socket.gethostname()
    return f"{settings.scheme}://{f'[{host}]' if ':' in host else host}:{port}"


def _orphaned(parent: int, every: float = 0.2) -> None:
    """A worker whose parent was killed exits at once, as the single process would have: no graceful stop
    against a log that died with the parent, and no agent kept waiting on answers that cannot come."""
    while os.getppid() == parent:
        time.sleep(every)
    os._exit(1)


def _announce(stack, path: Path) -> None:
    """Write the ready file once the HTTP server listens: the parent greets only when every worker serves."""
    while stack.server is None or not stack.server.started:
        time.sleep(0.02)
    path.write_text(f"{os.getpid()}\n")

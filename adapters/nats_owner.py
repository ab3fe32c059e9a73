"""Who serves a nats store: the starter's lock, the server's pid file, and servers left by a starter that died.

One store has one server. Its starter holds a POSIX lock on `<name>.lock` for as long as it lives (the
kernel drops it when the process dies, even by SIGKILL, and a forked child does not inherit it) and
records the server's pid in `<name>.pid`. A nats-server whose command line names this store's config,
found while we hold the lock, was left by a control plane that died: it is stopped before a new one
starts, never doubled. Stopped rather than adopted: an adopted server is not our child (no exit status to
supervise, no death signal, and its port may be another run's), and a SIGTERM lets it flush its store; the
cost is one start, well under a second here.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import structlog

log = structlog.get_logger("roving.nats")
PR_SET_PDEATHSIG = 1


class StoreInUse(RuntimeError):
    """Another live process serves this store; the message names it."""


def death_signal(parent: int, signum: int = signal.SIGTERM) -> Callable[[], None]:
    """A preexec_fn: the server gets `signum` (SIGTERM) when the thread that started it ends (Linux), so a killed
    control plane takes its server along; a parent already gone before the prctl is caught by the ppid."""

    def arm() -> None:
        try:
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signum)
        except OSError:
            return
        if os.getppid() != parent:
            os._exit(1)

    return arm


def cmdline(pid: int) -> list[str]:
    """A process's argv from /proc; empty when it is gone or a zombie."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def serves(pid: int, config: Path) -> bool:
    """A live nats-server started with this config (a recycled pid is some other program's)."""
    argv = cmdline(pid)
    return bool(argv) and Path(argv[0]).name == "nats-server" and str(config) in argv[1:]


def servers_of(config: Path, pid_file: Path) -> list[int]:
    """The pid file's server if it still serves this store, and any other /proc shows (a lost pid file)."""
    pids: set[int] = set()
    try:
        pids.add(int(pid_file.read_text().split()[0]))
    except (OSError, ValueError, IndexError):
        pass
    pids.update(int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit())
    return sorted(pid for pid in pids if pid != os.getpid() and serves(pid, config))


def end(pid: int, config: Path, grace: float = 10.0) -> None:
    """SIGTERM, wait for it to go, SIGKILL after `grace`; a pid that stops serving the store is gone."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not serves(pid, config):
                return
            time.sleep(0.05)


class StoreLock:
    """The starter's claim on one store: held from the first start to the last stop of one process."""

    def __init__(self, store_dir: Path, name: str) -> None:
        self.path = store_dir / f"{name}.lock"
        self.pid_file = store_dir / f"{name}.pid"
        self._fd: int | None = None

    def claim(self) -> None:
        if self._fd is not None:
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            owner = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise StoreInUse(f"{self.path.parent} is served by a running control plane (pid {owner}): "
                             "stop it first, or use another ROVING_DATA_DIR") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def clear_stale(self, config: Path) -> None:
        """Stop every server left on this store; call with the lock held, before starting ours."""
        for pid in servers_of(config, self.pid_file):
            log.warning("nats.stale_server", pid=pid, store=str(self.path.parent), action="stopping")
            end(pid, config)

    def record(self, pid: int) -> None:
        self.pid_file.write_text(f"{pid}\n")

    def release(self) -> None:
        self.pid_file.unlink(missing_ok=True)
        if self._fd is not None:
            os.close(self._fd)  # closing drops the POSIX lock
            self._fd = None

"""View snapshots: the read models saved to the data dir with the log position they reached.

A restart restores the snapshot and replays only the log after it, instead of the whole log. A snapshot is
used only when it is provably the same history: the same stream (its name and creation time), a position
not past the log's end, the same code (a fingerprint of `domain/` and `projections/`, whose classes the
state is made of) and a valid HMAC under the control plane's signing key (the payload is a pickle, so a
file nobody signed is never loaded). Anything else is logged with its reason and the views are rebuilt
from the log, which is always correct, only slower.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import hmac
import json
import os
import pickle
import signal
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import structlog

import domain
import projections

log = structlog.get_logger("roving.view_snapshots")
FORMAT = 1


class SnapshotViews(Protocol):
    @property
    def position(self) -> int: ...  # the last log position applied

    def saved_state(self) -> dict[str, dict[str, Any]]: ...

    def restore_state(self, state: dict[str, dict[str, Any]]) -> None: ...


class Unusable(Exception):
    """Why a snapshot file cannot be restored; the views are rebuilt from the log instead."""


@contextlib.contextmanager
def _no_gc():
    """Millions of small objects made at once: the cyclic collector would run over them again and again
    (loading took five times as long with it on); it runs once they are all in place."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def code_fingerprint() -> str:
    """A digest of the source that defines the views' state, and of the Python that pickles it."""
    digest = hashlib.sha256(f"{FORMAT} {sys.version_info[:2]}".encode())
    for package in (domain, projections):
        root = Path(package.__path__[0])  # the package's directory
        for source in sorted(root.rglob("*.py")):
            digest.update(str(source.relative_to(root.parent)).encode())
            digest.update(source.read_bytes())
    return digest.hexdigest()


@dataclass
class Writer:
    """A forked child writing one snapshot: its pid, the position it holds and when it was started."""

    pid: int
    position: int
    started: float  # time.perf_counter() before the fork
    wall: float  # time.time() then, to compare with the file's modification time


def _finished(pid: int) -> tuple[bool, int | None]:
    """Whether the child `pid` has ended, and its exit code (None if someone else already collected it)."""
    try:
        ended, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True, None
    return (True, os.waitstatus_to_exitcode(status)) if ended else (False, None)


class ViewSnapshots:
    """Saves `views` every `every` applied events (and when asked), restores them on start.

    A periodic save (`save_in_child`) forks: the child holds a copy-on-write image of the views at that
    position and pickles it while the tailer goes on applying events, so the tail pauses only for the fork,
    not for the pickling. One child at a time; a new one waits until `BUDGET` times the last one's duration
    has passed, so snapshots take at most 1/BUDGET of the time of a core, however large the views grow.
    Where there is no fork, or when the control plane stops (`save`), the caller's thread writes it."""

    BUDGET = 20
    CHILD_SECONDS = 600.0  # a child still writing after this long is killed; the previous snapshot stays

    def __init__(self, path: Path, key: bytes, recorder: Any, every: int = 50_000) -> None:
        self.path, self.key, self.recorder, self.every = Path(path), key, recorder, every
        self.fingerprint = code_fingerprint()
        self.saved_position = 0
        self.next_save = 0.0  # time.monotonic() before which a periodic save waits
        self.writer: Writer | None = None
        self.last_pause = 0.0  # seconds the tail stopped for the last periodic save (the fork itself)

    def restore(self, views: SnapshotViews) -> int:
        """Restore `views` from the snapshot if it fits this log and this code; the position reached (0: none)."""
        if not self.path.exists():
            return 0
        started = time.perf_counter()
        try:
            header, state = self._read()
            views.restore_state(state)
        except (Unusable, ValueError) as why:
            log.warning("view_snapshot.ignored", path=str(self.path), reason=str(why))
            return 0
        self.saved_position = header["position"]
        log.info("view_snapshot.restored", position=header["position"],
                 seconds=round(time.perf_counter() - started, 3))
        return header["position"]

    def due(self, views: SnapshotViews) -> bool:
        self.reap()
        return (self.writer is None and views.position - self.saved_position >= self.every
                and time.monotonic() >= self.next_save)

    def save_in_child(self, views: SnapshotViews) -> None:
        """Start a child that writes the views as they are now; returns once it is forked."""
        if not hasattr(os, "fork"):
            self.save(views)
            return
        started, wall = time.perf_counter(), time.time()
        identity, _ = self.recorder.log_identity()
        state, position = views.saved_state(), views.position
        with warnings.catch_warnings():
            # Python warns that a fork of a threaded process may deadlock in the child if the child takes a
            # lock another thread held. This child takes none: it pickles plain view state, writes one file
            # and leaves with os._exit (no logging, no atexit, no flush); CHILD_SECONDS bounds it anyway.
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:
            self._child_writes(state, position, identity)
        self.saved_position = position  # a failed write is tried again `every` events later
        self.writer = Writer(pid, position, started, wall)
        self.last_pause = time.perf_counter() - started

    def _child_writes(self, state: dict[str, dict[str, Any]], position: int, identity: str) -> None:
        code = 1
        try:
            gc.disable()  # no finalizers of the parent's objects run here
            # nor does it keep the parent's sockets (the API's listening port among them) open after the
            # parent ends: a restart could not bind them until this child had finished
            os.closerange(3, os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 1024)
            self._write(state, position, identity)
            code = 0
        finally:
            os._exit(code)

    def reap(self, wait: float = 0.0, give_up: bool = False) -> None:
        """Collect a finished child (waiting up to `wait` seconds, then killing it if `give_up`, or if it
        has run CHILD_SECONDS): log how it went and set when the next may start."""
        writer = self.writer
        if writer is None:
            return
        deadline = time.monotonic() + wait
        done, code = _finished(writer.pid)
        while not done and time.monotonic() < deadline:
            time.sleep(0.01)
            done, code = _finished(writer.pid)
        took = time.perf_counter() - writer.started
        if not done and not give_up and took < self.CHILD_SECONDS:
            return
        if not done:
            os.kill(writer.pid, signal.SIGKILL)
            os.waitpid(writer.pid, 0)
        self.writer = None
        if code == 0:  # the file's time is when the child finished; this call may come much later
            with contextlib.suppress(OSError):
                took = min(took, max(self.last_pause, self.path.stat().st_mtime - writer.wall))
            self._saved(writer.position, took, paused=round(self.last_pause, 4))
            return
        self.next_save = time.monotonic() + self.BUDGET * took
        self._tmp(writer.pid).unlink(missing_ok=True)
        log.warning("view_snapshot.not_saved", position=writer.position, seconds=round(took, 3),
                    reason=("killed: it took too long" if not done else f"the writer exited with status {code}"
                            if code is not None else "collected elsewhere: its exit status is unknown"))

    def save(self, views: SnapshotViews) -> None:
        """Write the views' state from this thread (after any child still writing has finished)."""
        self.reap(wait=60.0, give_up=True)
        started = time.perf_counter()
        identity, _ = self.recorder.log_identity()
        state = views.saved_state()
        position = self.saved_position = views.position  # a failed write is tried again `every` events later
        size = self._write(state, position, identity)
        self._saved(position, time.perf_counter() - started, bytes=size)

    def _saved(self, position: int, took: float, **figures: Any) -> None:
        """A snapshot taking `took` seconds was written: the next waits BUDGET times as long."""
        self.next_save = time.monotonic() + self.BUDGET * took
        log.info("view_snapshot.saved", position=position, seconds=round(took, 3), **figures)

    def _write(self, state: dict[str, dict[str, Any]], position: int, identity: str) -> int:
        """The file, atomically: a crash mid-write leaves the previous snapshot in place."""
        with _no_gc():
            payload = pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
        header = {"format": FORMAT, "fingerprint": self.fingerprint, "log": identity, "position": position,
                  "hmac": self._sign(payload)}
        tmp = self._tmp(os.getpid())
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(json.dumps(header).encode() + b"\n" + payload)
        os.replace(tmp, self.path)
        return len(payload)

    def _tmp(self, pid: int) -> Path:
        return self.path.with_name(f"{self.path.name}.{pid}.tmp")

    def _read(self) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        try:
            raw = self.path.read_bytes()
            line, _, payload = raw.partition(b"\n")
            header = json.loads(line)
        except (OSError, ValueError) as error:
            raise Unusable(f"unreadable: {error}") from error
        self._check(header, payload)
        try:
            with _no_gc():
                state = pickle.loads(payload)  # noqa: S301 - signed by this control plane's key, checked above
        except Exception as error:  # noqa: BLE001 - any failure to load means: rebuild from the log
            raise Unusable(f"cannot be loaded: {error}") from error
        if not isinstance(state, dict):
            raise Unusable("holds no view state")
        return header, state

    def _check(self, header: dict[str, Any], payload: bytes) -> None:
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise Unusable("written in another format")
        if not hmac.compare_digest(str(header.get("hmac", "")), self._sign(payload)):
            raise Unusable("its signature does not match this control plane's key")
        if header.get("fingerprint") != self.fingerprint:
            raise Unusable("written by another version of the code")
        identity, last = self.recorder.log_identity()
        if header.get("log") != identity:
            raise Unusable(f"taken from another log ({header.get('log')}, this one is {identity})")
        position = header.get("position")
        if not isinstance(position, int) or not 0 <= position <= last:
            raise Unusable(f"its position {position} is past the log's end ({last})")

    def _sign(self, payload: bytes) -> str:
        return hmac.new(self.key, payload, hashlib.sha256).hexdigest()

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
import sys
import time
from pathlib import Path
from typing import Any, Protocol

import structlog

import domain
import projections

log = structlog.get_logger("roving.view_snapshots")
FORMAT = 1


class SnapshotViews(Protocol):
    position: int

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
        root = Path(package.__file__).parent
        for source in sorted(root.rglob("*.py")):
            digest.update(str(source.relative_to(root.parent)).encode())
            digest.update(source.read_bytes())
    return digest.hexdigest()


class ViewSnapshots:
    """Saves `views` every `every` applied events (and when asked), restores them on start.

    Saving runs on the tailer's thread (the views' only writer): readers go on answering, but new events
    wait until the file is written. So a save is also held back until `BUDGET` times its last duration has
    passed: at most 1/BUDGET of the tail's time goes to snapshots, however large the views grow."""

    BUDGET = 20

    def __init__(self, path: Path, key: bytes, recorder: Any, every: int = 50_000) -> None:
        self.path, self.key, self.recorder, self.every = Path(path), key, recorder, every
        self.fingerprint = code_fingerprint()
        self.saved_position = 0
        self.next_save = 0.0  # time.monotonic() before which a periodic save waits

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
        return views.position - self.saved_position >= self.every and time.monotonic() >= self.next_save

    def save(self, views: SnapshotViews) -> None:
        """Write the views' state atomically (a crash mid-write leaves the previous snapshot in place)."""
        started = time.perf_counter()
        identity, _ = self.recorder.log_identity()
        state = views.saved_state()
        position = self.saved_position = views.position  # a failed write is tried again `every` events later
        with _no_gc():
            payload = pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
        header = {"format": FORMAT, "fingerprint": self.fingerprint, "log": identity, "position": position,
                  "hmac": self._sign(payload)}
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(json.dumps(header).encode() + b"\n" + payload)
        os.replace(tmp, self.path)
        took = time.perf_counter() - started
        self.next_save = time.monotonic() + self.BUDGET * took
        log.info("view_snapshot.saved", position=position, bytes=len(payload), seconds=round(took, 3))

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

"""The agent's durable outbox: every report is on disk before it is sent, and leaves only once answered.

Reports are lines of one append-only journal, `journal.jsonl`: `{"put": N, "body": {...}}` when a report is
made, `{"done": N}` when it was answered. `put_many` writes the reports of a round with one write and one fsync,
so an agent reporting many ends pays for one flush, not one per report (and no file is made and removed per
report). A crash at any moment leaves each report whole or absent: a torn last line is skipped. A `done` line is
not flushed on its own: losing one only means the report is sent again, and reports are idempotent, keyed by
(allocation, epoch, kind): putting one again while it waits changes nothing, and the control plane answers a
report it already recorded as a success. The journal is emptied once nothing waits, and rewritten (to a new file,
flushed, then renamed) when it grows long with reports still waiting. Reads keep the order reports were made in,
so the reports of one allocation (started, ready, exited) reach the control plane in order, across restarts.
Reports an older agent left as one file each (`<sequence>-<allocation>-<epoch>-<kind>.json`) are taken in first.
Each report is the protocol's `Report` (domain/agent_protocol.py), so what an older agent wrote there as a plain
mapping is read as one; an entry that is no report (it could never be taken) is counted in `unreadable`, not sent.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from domain.agent_protocol import Report

BACKOFF_FIRST, BACKOFF_MAX = 0.2, 30.0
JOURNAL = "journal.jsonl"
REWRITE_AFTER = 4 << 20  # bytes of journal, with reports still waiting, before it is rewritten to what waits


@dataclass
class Entry:
    sequence: int
    key: tuple[str, int, str]
    body: Report
    attempts: int = 0
    not_before: float = 0.0  # monotonic time of the next try
    first_error: str = field(default="")

    @property
    def allocation(self) -> str:
        return self.key[0]

    def back_off(self, now: float, error: str) -> None:
        """Exponential backoff with full jitter, so agents that lost the API together do not return together."""
        self.attempts += 1
        self.first_error = self.first_error or error
        ceiling = min(BACKOFF_MAX, BACKOFF_FIRST * 2 ** min(self.attempts, 16))
        self.not_before = now + random.uniform(ceiling / 2, ceiling)


class Line(msgspec.Struct, omit_defaults=True):
    """One line of the journal: `{"put": N, "body": report}` or `{"done": N}`."""

    put: int | None = None
    body: Report | None = None
    done: int | None = None


LINES = msgspec.json.Decoder(Line)
ENCODER = msgspec.json.Encoder()


def key_of(body: Report) -> tuple[str, int, str]:
    """(allocation, epoch, event); a service's readiness changes after the first carry their count (`ready#2`), so a
    ready, unready, ready again are three reports, never one."""
    return body.key()


class Outbox:
    """Reports not yet acknowledged, in the order they were made."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.path = self.directory / JOURNAL
        self.entries: dict[tuple[str, int, str], Entry] = {}
        self.sequence = 0
        self.unreadable = 0  # entries found that are no report (never sent: the control plane could not take them)
        for entry in sorted(self._read_all(), key=lambda e: e.sequence):
            self.entries[entry.key] = entry
            self.sequence = max(self.sequence, entry.sequence)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._adopt_files()

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def put(self, body: Report) -> Entry:
        return self.put_many([body])[0]

    def put_many(self, bodies: list[Report]) -> list[Entry]:
        """Each report on disk (one write, one fsync for all) before any is handed out; one already waiting is
        the entry it was."""
        found, lines = [], []
        for body in bodies:
            key = key_of(body)
            if key not in self.entries:
                self.sequence += 1
                self.entries[key] = Entry(self.sequence, key, body)
                lines.append(Line(put=self.sequence, body=body))
            found.append(self.entries[key])
        if lines:
            self._append(lines, durable=True)
        return found

    def pending(self) -> list[Entry]:
        return sorted(self.entries.values(), key=lambda e: e.sequence)

    def done(self, entry: Entry) -> None:
        self.done_many([entry])

    def done_many(self, entries: list[Entry]) -> None:
        gone = [e for e in entries if self.entries.pop(e.key, None) is not None]
        if not gone:
            return
        if not self.entries:
            os.ftruncate(self._fd, 0)  # nothing waits: the journal starts again empty (O_APPEND writes at its end)
            return
        self._append([Line(done=e.sequence) for e in gone], durable=False)
        if os.fstat(self._fd).st_size > REWRITE_AFTER:
            self._rewrite()

    def __len__(self) -> int:
        return len(self.entries)

    def _append(self, lines: list[Line], durable: bool) -> None:
        os.write(self._fd, b"".join(ENCODER.encode(line) + b"\n" for line in lines))
        if durable:
            os.fdatasync(self._fd)

    def _rewrite(self) -> None:
        """What still waits, to a new journal that replaces the long one whole."""
        tmp = self.path.with_suffix(".tmp")
        data = b"".join(ENCODER.encode(Line(put=e.sequence, body=e.body)) + b"\n" for e in self.pending())
        _write_durably(tmp, data)
        os.replace(tmp, self.path)
        _sync_directory(self.directory)
        os.close(self._fd)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND, 0o600)

    def _read_all(self) -> list[Entry]:
        for stale in self.directory.glob("*.tmp"):
            stale.unlink(missing_ok=True)  # a write that never finished: nothing of it was handed out
        if not self.path.exists():
            return []
        made: dict[int, Entry] = {}
        for line in self.path.read_bytes().splitlines():
            try:
                record = LINES.decode(line)
            except msgspec.ValidationError:
                self.unreadable += 1  # whole, but no report: never sendable
                continue
            except msgspec.DecodeError:
                continue  # a torn last line: its report was never handed out
            if record.done is not None:
                made.pop(record.done, None)
            elif record.put is not None and record.body is not None:
                made[record.put] = Entry(record.put, key_of(record.body), record.body)
        return list(made.values())

    def _adopt_files(self) -> None:
        """Reports an older agent left one file each: into the journal (after what it holds), then the files go."""
        legacy = []
        for path in self.directory.glob("*.json"):
            try:
                legacy.append((int(path.name.split("-", 1)[0]), msgspec.json.decode(path.read_bytes(), type=Report), path))
            except (OSError, ValueError):  # msgspec's DecodeError and ValidationError are ValueErrors
                path.rename(path.with_suffix(".unreadable"))  # kept for an admin to look at, never resent
        self.put_many([body for _, body, _ in sorted(legacy, key=lambda item: item[0])])
        for _, _, path in legacy:
            path.unlink(missing_ok=True)


def _write_durably(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def _sync_directory(directory: Path) -> None:
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)

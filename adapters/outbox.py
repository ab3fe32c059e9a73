"""The agent's durable outbox: every report is on disk before it is sent, and leaves only once answered.

One JSON file per report, named `<sequence>-<allocation>-<epoch>-<kind>.json`, written to a temporary name,
flushed and renamed, so a crash at any moment leaves either the whole report or none of it. The key
(allocation, epoch, kind) makes a report idempotent: putting it again while it waits changes nothing, and the
control plane answers a report it already recorded as a success. Files are read back in sequence order, so the
reports of one allocation (started, ready, exited) reach the control plane in the order they happened, across
agent restarts.
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BACKOFF_FIRST, BACKOFF_MAX = 0.2, 30.0


@dataclass
class Entry:
    path: Path
    sequence: int
    key: tuple[str, int, str]
    body: dict[str, Any]
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


def key_of(body: dict[str, Any]) -> tuple[str, int, str]:
    """(allocation, epoch, event); a service's readiness changes after the first carry their count (`ready#2`), so a
    ready, unready, ready again are three reports, never one."""
    event, change = str(body["event"]), int(body.get("change") or 0)
    return str(body["allocation_id"]), int(body["epoch"]), f"{event}#{change}" if change else event


class Outbox:
    """Reports not yet acknowledged, in the order they were made."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.entries: dict[tuple[str, int, str], Entry] = {}
        self.sequence = 0
        for entry in sorted(self._read_all(), key=lambda e: e.sequence):
            self.entries[entry.key] = entry
            self.sequence = max(self.sequence, entry.sequence)

    def put(self, body: dict[str, Any]) -> Entry:
        key = key_of(body)
        if key in self.entries:
            return self.entries[key]
        self.sequence += 1
        path = self.directory / f"{self.sequence:012d}-{key[0]}-{key[1]}-{key[2]}.json"
        _write_durably(path, json.dumps(body).encode())
        entry = self.entries[key] = Entry(path, self.sequence, key, body)
        return entry

    def pending(self) -> list[Entry]:
        return sorted(self.entries.values(), key=lambda e: e.sequence)

    def done(self, entry: Entry) -> None:
        self.entries.pop(entry.key, None)
        entry.path.unlink(missing_ok=True)

    def __len__(self) -> int:
        return len(self.entries)

    def _read_all(self) -> list[Entry]:
        found = []
        for path in self.directory.glob("*.json"):
            try:
                body = json.loads(path.read_bytes())
                key = key_of(body)
                found.append(Entry(path, int(path.name.split("-", 1)[0]), key, body))
            except (OSError, ValueError, KeyError):
                path.rename(path.with_suffix(".unreadable"))  # kept for an admin to look at, never resent
        for stale in self.directory.glob("*.tmp"):
            stale.unlink(missing_ok=True)  # a write that never finished: its report was never handed out
        return found


def _write_durably(path: Path, data: bytes) -> None:
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)

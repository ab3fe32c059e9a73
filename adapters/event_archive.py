"""The event archive: Parquet files of events cut from the log, with their audit rows, under `<data>/archive/`.

Each file holds the audit row of every event it archives (the audit's columns) and the event as the log stored it
(`topic`, `state`), so the audit can read it back (a rebuilt audit restores it, adapters.duckdb_store) and a purged
workflow can still be rebuilt for describe and events (projections.cold_workflows). A round of the retention
(adapters.retention) writes one file, named by the time it was written; a crash between writing a file and purging
the log archives the same events again in the next file, so readers keep one row per stream sequence (`position`).
`index.sqlite` says which files hold each aggregate, so reading one reads only those; it is written before the log
is purged, so an aggregate it does not name still has its events in the log (a lost index is rebuilt from the files).
The directory is 0700 and each file 0600: they hold every tenant's events, whatever the data directory's own mode.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, NamedTuple

import duckdb

from adapters.duckdb_store import COLUMNS

GLOB = "events-*.parquet"
INDEX = "index.sqlite"
INDEX_SCHEMA = ("CREATE TABLE IF NOT EXISTS held "
                "(aggregate_id TEXT NOT NULL, file TEXT NOT NULL, PRIMARY KEY (aggregate_id, file))")
RECORD = """
CREATE TABLE IF NOT EXISTS archived_workflows (
    workflow VARCHAR PRIMARY KEY, archived_at TIMESTAMPTZ NOT NULL, events BIGINT NOT NULL, file VARCHAR NOT NULL,
    purged BOOLEAN NOT NULL, last_position BIGINT NOT NULL);
"""
RAW = ("CREATE OR REPLACE TEMP TABLE retention_raw "
       "(workflow VARCHAR, aggregate VARCHAR, position BIGINT, topic VARCHAR, state BLOB)")
ARCHIVED_ROWS = f"""
SELECT {', '.join('a.' + c for c in COLUMNS)}, r.topic, r.state
FROM audit_events a JOIN retention_raw r ON a.position = r.position WHERE a.cluster = $1 ORDER BY a.position
"""


class StoredRow(NamedTuple):
    """One archived event as the log held it."""

    version: int
    topic: str
    state: bytes


class EventArchive:
    """The archive directory: file names, and reads of what it holds (its own in-memory DuckDB, any process)."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self._lock = threading.Lock()
        self._db: duckdb.DuckDBPyConnection | None = None
        self._held: sqlite3.Connection | None = None

    def remember(self, path: Path, aggregates: list[str]) -> None:
        """That `path` holds these aggregates' events (before they are purged from the log)."""
        with self._lock:
            index = self._index()
            with index:
                index.executemany("INSERT OR IGNORE INTO held VALUES (?, ?)", [(a, path.name) for a in aggregates])

    def files_of(self, aggregate_id: str) -> list[Path]:
        """The files holding an aggregate's events, by the index (none for an aggregate never archived)."""
        if not (self.directory / INDEX).exists() and not self.files():
            return []
        with self._lock:
            names = [n for (n,) in self._index().execute("SELECT file FROM held WHERE aggregate_id = ?", (aggregate_id,))]
        return [self.directory / n for n in names if (self.directory / n).exists()]

    def _index(self) -> sqlite3.Connection:
        """The open index (call under the lock); made from the files themselves when it is missing."""
        path = self.directory / INDEX
        if self._held is None or not path.exists():
            self._private_directory()
            missing = not path.exists()
            self._held = sqlite3.connect(str(path), check_same_thread=False, timeout=30.0)
            self._held.execute(INDEX_SCHEMA)
            os.chmod(path, 0o600)
            if missing and self.files():
                rows = self._scan("SELECT DISTINCT aggregate_id, filename FROM read_parquet($1, filename = true)",
                                  [[str(f) for f in self.files()]])
                with self._held:
                    self._held.executemany("INSERT OR IGNORE INTO held VALUES (?, ?)",
                                           [(a, Path(f).name) for a, f in rows])
        return self._held

    def _private_directory(self) -> None:
        """The directory, closed to other local users (an archive made before this was so is closed too)."""
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.directory.chmod(0o700)

    def files(self) -> list[Path]:
        return sorted(self.directory.glob(GLOB)) if self.directory.is_dir() else []

    def new_file(self) -> Path:
        """A name no earlier round used: rounds are seconds apart, and the nanoseconds keep two apart anyway."""
        self._private_directory()
        return self.directory / f"events-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{time.time_ns()}.parquet"

    def source(self, files: list[Path] | None = None) -> str:
        """A FROM clause over the files (every one by default), one row per stream sequence (a re-archived event
        counts once)."""
        listed = ", ".join(_literal(str(f)) for f in (self.files() if files is None else files))
        return (f"(SELECT * FROM read_parquet([{listed}], union_by_name = true) "
                f"QUALIFY row_number() OVER (PARTITION BY cluster, position ORDER BY position) = 1)")

    def events_of(self, aggregate_id: str) -> list[StoredRow]:
        """One aggregate's archived events in version order; empty when none was archived."""
        files = self.files_of(aggregate_id)
        if not files:
            return []
        rows = self._query(f"SELECT DISTINCT version, topic, state FROM {self.source(files)} "
                           "WHERE aggregate_id = $1 ORDER BY version", [aggregate_id])
        return [StoredRow(int(v), str(t), bytes(s)) for v, t, s in rows]

    def _query(self, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._scan(sql, params)

    def _scan(self, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
        """(call under the lock)"""
        if self._db is None:
            self._db = duckdb.connect(":memory:")
            self._db.execute("SET memory_limit = '256MB'")
        return self._db.execute(sql, params).fetchall()


def record(cursor: duckdb.DuckDBPyConnection) -> None:
    """The audit database's table of archived workflows (and whether the log was purged of them yet)."""
    cursor.execute(RECORD)


def restore_missing(cursor: duckdb.DuckDBPyConnection, archive: EventArchive) -> int:
    """Put back into a new (or rebuilt) audit table the archived rows it lacks, and the record of what was
    archived: the log no longer holds those events, so the feed cannot. Call it once the feed has caught up: an
    archived event still in the log (a purge that did not happen) is then in the table already, not written twice.
    An audit that records any archived workflow has seen the archive: nothing to do. Returns the rows restored."""
    if not archive.files() or _count(cursor, "SELECT count(*) FROM archived_workflows"):
        return 0
    source = archive.source()
    before = _count(cursor, "SELECT count(*) FROM audit_events")
    cursor.execute(f"INSERT INTO audit_events SELECT {', '.join(COLUMNS)} FROM {source} a WHERE NOT EXISTS ("
                   "SELECT 1 FROM audit_events e WHERE e.cluster = a.cluster AND e.position = a.position)")
    cursor.execute(f"INSERT INTO archived_workflows SELECT workflow, max(time), count(*), 'restored', true, max(position) "
                   f"FROM {source} WHERE workflow IS NOT NULL GROUP BY workflow ON CONFLICT DO NOTHING")
    return _count(cursor, "SELECT count(*) FROM audit_events") - before


def _count(cursor: duckdb.DuckDBPyConnection, sql: str) -> int:
    found = cursor.execute(sql).fetchone()
    return int(found[0]) if found else 0


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"

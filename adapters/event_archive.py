"""The event archive: Parquet files of events cut from the log, with their audit rows, under `<data>/archive/`.

Each file holds the audit row of every event it archives (the audit's columns) and the event as the log stored it
(`topic`, `state`), so the audit can read it back (a rebuilt audit restores it, adapters.duckdb_store) and a purged
workflow can still be rebuilt for describe and events (projections.cold_workflows). A round of the retention
(adapters.retention) writes one file, named by the time it was written; a crash between writing a file and purging
the log archives the same events again in the next file, so readers keep one row per stream sequence (`position`).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, NamedTuple

import duckdb

from adapters.duckdb_store import COLUMNS

GLOB = "events-*.parquet"
RECORD = """
CREATE TABLE IF NOT EXISTS archived_workflows (
    workflow VARCHAR PRIMARY KEY, archived_at TIMESTAMPTZ NOT NULL, events BIGINT NOT NULL, file VARCHAR NOT NULL,
    purged BOOLEAN NOT NULL, last_position BIGINT NOT NULL);
"""
RAW = "CREATE OR REPLACE TEMP TABLE retention_raw (workflow VARCHAR, position BIGINT, topic VARCHAR, state BLOB)"
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

    def files(self) -> list[Path]:
        return sorted(self.directory.glob(GLOB)) if self.directory.is_dir() else []

    def new_file(self) -> Path:
        """A name no earlier round used: rounds are seconds apart, and the nanoseconds keep two apart anyway."""
        self.directory.mkdir(parents=True, exist_ok=True)
        return self.directory / f"events-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{time.time_ns()}.parquet"

    def source(self) -> str:
        """A FROM clause over every file, one row per stream sequence (a re-archived event counts once)."""
        listed = ", ".join(_literal(str(f)) for f in self.files())
        return (f"(SELECT * FROM read_parquet([{listed}], union_by_name = true) "
                f"QUALIFY row_number() OVER (PARTITION BY cluster, position ORDER BY position) = 1)")

    def events_of(self, aggregate_id: str) -> list[StoredRow]:
        """One aggregate's archived events in version order; empty when none was archived."""
        if not self.files():
            return []
        rows = self._query(f"SELECT DISTINCT version, topic, state FROM {self.source()} "
                           "WHERE aggregate_id = $1 ORDER BY version", [aggregate_id])
        return [StoredRow(int(v), str(t), bytes(s)) for v, t, s in rows]

    def summary(self) -> dict[str, Any]:
        """Files, bytes on disk, events and workflows archived, and the oldest and newest event time."""
        files = self.files()
        found: dict[str, Any] = {"files": len(files), "bytes": sum(f.stat().st_size for f in files),
                                 "events": 0, "workflows": 0, "oldest": None, "newest": None}
        if files:
            (events, workflows, oldest, newest), = self._query(
                f"SELECT count(*), count(DISTINCT workflow), min(time), max(time) FROM {self.source()}", [])
            found.update(events=int(events), workflows=int(workflows),
                         oldest=oldest.isoformat() if oldest else None, newest=newest.isoformat() if newest else None)
        return found

    def _query(self, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
        with self._lock:
            if self._db is None:
                self._db = duckdb.connect(":memory:")
                self._db.execute("SET memory_limit = '256MB'")
            return self._db.execute(sql, params).fetchall()


def record(cursor: duckdb.DuckDBPyConnection) -> None:
    """The audit database's table of archived workflows (and whether the log was purged of them yet)."""
    cursor.execute(RECORD)


def restore_missing(cursor: duckdb.DuckDBPyConnection, archive: EventArchive) -> int:
    """Put back into a new (or rebuilt) audit table the archived rows it lacks, and the record of what was
    archived: the log no longer holds those events, so the feed cannot. Returns the rows restored."""
    if not archive.files():
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

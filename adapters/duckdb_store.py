"""The DuckDB audit store: schema, the one-transaction batch write, and sandboxed read cursors.

One store owns one DuckDB database (a file, or memory for tests). It runs with external access
disabled and its configuration locked, except for a private staging directory that Parquet exports
are written to before being moved where the caller asked, and the event archive (adapters.event_archive) it reads
back: user SQL can reach no other file.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

import duckdb

COLUMNS = (
    "position", "cluster", "time", "aggregate_kind", "aggregate_id", "version", "event_type", "principal",
    "role", "source", "organization", "group_name", "workflow", "node", "payload",
)
JSON_TYPES = {
    "position": "BIGINT", "cluster": "VARCHAR", "time": "BIGINT", "aggregate_kind": "VARCHAR",
    "aggregate_id": "VARCHAR", "version": "BIGINT", "event_type": "VARCHAR", "principal": "VARCHAR",
    "role": "VARCHAR", "source": "VARCHAR", "organization": "VARCHAR", "group_name": "VARCHAR",
    "workflow": "VARCHAR", "node": "VARCHAR", "payload": "VARCHAR",
}
SCHEMA = """
CREATE TABLE IF NOT EXISTS audit_events (
    position BIGINT NOT NULL, cluster VARCHAR NOT NULL, time TIMESTAMPTZ NOT NULL,
    aggregate_kind VARCHAR NOT NULL, aggregate_id VARCHAR NOT NULL, version BIGINT NOT NULL,
    event_type VARCHAR NOT NULL, principal VARCHAR, role VARCHAR, source VARCHAR,
    organization VARCHAR, group_name VARCHAR, workflow VARCHAR, node VARCHAR, payload JSON,
    PRIMARY KEY (cluster, position)
);
CREATE TABLE IF NOT EXISTS audit_tracking (cluster VARCHAR NOT NULL, position BIGINT NOT NULL);
"""
ROWS_SHAPE = json.dumps([JSON_TYPES])
INSERT_ROWS = f"""
INSERT INTO audit_events
SELECT r.position, r.cluster, make_timestamptz(r.time), r.aggregate_kind, r.aggregate_id, r.version,
       r.event_type, r.principal, r.role, r.source, r.organization, r.group_name, r.workflow, r.node, r.payload::JSON
FROM (SELECT unnest(from_json(chunk, '{ROWS_SHAPE}')) AS r FROM (SELECT unnest($1) AS chunk))
"""
# An UPDATE in place: INSERT OR REPLACE on a keyed table costs a delete and an insert per batch.
UPDATE_TRACKING = "UPDATE audit_tracking SET position = $2 WHERE cluster = $1"
INSERT_TRACKING = "INSERT INTO audit_tracking VALUES ($1, $2)"
LINEAGE = """
SELECT aggregate_id, arg_min(workflow, position), arg_min(organization, position), arg_min(group_name, position)
FROM audit_events WHERE workflow IS NOT NULL GROUP BY aggregate_id ORDER BY max(position) DESC LIMIT $1
"""
LINEAGE_OF = """
SELECT workflow, organization, group_name FROM audit_events WHERE aggregate_id = $1 AND workflow IS NOT NULL
ORDER BY position LIMIT 1
"""
MEMORY_LIMIT, TEMP_LIMIT = "1GB", "4GB"
CHUNK = 1000  # rows per JSON document: several documents parse in parallel


class AuditStore:
    """DuckDB connection, schema and transactions for the audit table and its tracking positions."""

    def __init__(self, path: str | Path = ":memory:", archive: str | Path | None = None) -> None:
        self._staging = Path(tempfile.mkdtemp(prefix="roving-audit-export-"))
        self.archive = Path(archive) if archive is not None else None
        self.connection = duckdb.connect(str(path))
        self.connection.execute(SCHEMA)
        self._sandbox()

    def staged(self, suffix: str = ".parquet") -> Path:
        """A new file name in the staging directory, the one place this database may write."""
        return self._staging / f"{uuid.uuid4().hex}{suffix}"

    def _sandbox(self) -> None:
        # our own SQL only (lists, exports, the feed's writes; tenant SQL runs in adapters.audit_sandbox),
        # yet not DuckDB's default of 80% of the host's memory
        self.connection.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")
        self.connection.execute(f"SET temp_directory = '{self._staging}/spill'")
        self.connection.execute(f"SET max_temp_directory_size = '{TEMP_LIMIT}'")
        readable = [f"{self._staging}/"] + ([f"{self.archive}/"] if self.archive is not None else [])
        self.connection.execute(f"SET allowed_directories = [{', '.join(map(_literal, readable))}]")
        self.connection.execute("SET enable_external_access = false")
        self.connection.execute("SET lock_configuration = true")

    def close(self) -> None:
        self.connection.close()
        shutil.rmtree(self._staging, ignore_errors=True)

    def position(self, cluster: str) -> int:
        found = self.connection.execute("SELECT position FROM audit_tracking WHERE cluster = $1", [cluster]).fetchone()
        return found[0] if found else 0

    def lineage(self, most: int | None = None) -> dict[str, tuple[str | None, str | None, str | None]]:
        """aggregate id -> (workflow, organization, group), as the aggregate's first attributed row said, for the
        `most` aggregates written last (newest first; every one when None).

        Read back from the rows themselves, so it is exactly as durable as they are and costs the
        write path nothing; a restart pays one grouped scan.
        """
        rows = self.connection.execute(LINEAGE, [most if most is not None else 2**62]).fetchall()
        return {aggregate_id: (workflow, org, group) for aggregate_id, workflow, org, group in rows}

    def lineage_of(self, aggregate_id: str) -> tuple[str | None, str | None, str | None] | None:
        """One aggregate's lineage from its rows (None: no row of it names a workflow)."""
        with self.connection.cursor() as cursor:  # its own cursor: the routes read beside the feed
            found = cursor.execute(LINEAGE_OF, [aggregate_id]).fetchone()
        return (found[0], found[1], found[2]) if found is not None else None

    def write(self, cluster: str, rows: list[bytes], position: int) -> None:
        """Rows (each one JSON-encoded row object) and the cluster's new position: all or nothing."""
        cursor = self.connection.cursor()
        try:
            cursor.execute("BEGIN TRANSACTION")
            if rows:
                cursor.execute(INSERT_ROWS, [[_json_array(rows[at:at + CHUNK]) for at in range(0, len(rows), CHUNK)]])
            counted = cursor.execute(UPDATE_TRACKING, [cluster, position]).fetchone()
            assert counted is not None, "duckdb answers an UPDATE with its count"
            (updated,) = counted
            if not updated:
                cursor.execute(INSERT_TRACKING, [cluster, position])
            cursor.execute("COMMIT")
        except BaseException:
            cursor.execute("ROLLBACK")
            raise
        finally:
            cursor.close()

    def reserved_names(self) -> frozenset[str]:
        """Every table and view name the database resolves, so user CTEs cannot shadow one."""
        rows = self.connection.cursor().execute(  # a cursor of its own: connections are not shared across threads
            "SELECT lower(table_name) FROM duckdb_tables() UNION SELECT lower(view_name) FROM duckdb_views()"
        ).fetchall()
        return frozenset(name for (name,) in rows)

    def scoped_cursor(self, organization: str | None) -> duckdb.DuckDBPyConnection:
        """A cursor whose temporary `audit` view shows one organization's rows, or all when None."""
        cursor = self.connection.cursor()
        where = "" if organization is None else f" WHERE organization = {_literal(organization)}"
        cursor.execute(f"CREATE TEMP VIEW audit AS SELECT {', '.join(COLUMNS)} FROM audit_events{where}")
        return cursor

    def copy_to_parquet(self, select_sql: str, params: list[Any], destination: str | Path) -> None:
        """COPY a query's rows to Parquet in the staging directory, then move the file into place."""
        staged = self._staging / f"{uuid.uuid4().hex}.parquet"
        cursor = self.connection.cursor()
        try:
            cursor.execute(f"COPY ({select_sql}) TO {_literal(str(staged))} (FORMAT parquet)", params)
        finally:
            cursor.close()
        shutil.move(staged, destination)


def _json_array(rows: list[bytes]) -> str:
    return (b"[" + b",".join(rows) + b"]").decode()


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"

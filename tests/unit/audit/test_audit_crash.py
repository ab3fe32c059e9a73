"""A crash between writing rows and committing them must lose nothing and duplicate nothing on replay."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from adapters.audit_log import AuditLog
from adapters.duckdb_store import AuditStore
from projections.audit import AuditFilters, AuditProjection, Scope
from tests.unit.audit.builders import Log, allocation, workflow

ROOT = Path(__file__).resolve().parents[3]
CRASH_AT_COMMIT = textwrap.dedent("""
    import os, sys
    from adapters.duckdb_store import AuditStore
    from projections.audit import AuditProjection
    from tests.unit.audit.test_audit_crash import sample_log, CrashAtCommit

    log = sample_log()
    store = AuditStore(sys.argv[1])
    projection = AuditProjection(store, "c1")
    projection.apply(log.events[:5])
    store.connection = CrashAtCommit(store.connection, lambda: os._exit(17))
    projection.apply(log.events[5:])
""")


def sample_log() -> Log:
    log = Log()
    log.record(workflow(1, "org-a", "alice"), allocation(1, 1, "n1"), workflow(2, "org-b", "bob"))
    return log


class CrashAtCommit:
    """Wraps a DuckDB connection: every statement runs, then COMMIT is replaced by `crash`."""

    def __init__(self, connection, crash):
        self.connection, self.crash = connection, crash

    def cursor(self):
        return _Cursor(self.connection.cursor(), self.crash)

    def __getattr__(self, name):
        return getattr(self.connection, name)


class _Cursor:
    def __init__(self, cursor, crash):
        self.cursor, self.crash = cursor, crash

    def execute(self, sql, *params):
        if sql == "COMMIT":
            self.crash()
        return self.cursor.execute(sql, *params)

    def __getattr__(self, name):
        return getattr(self.cursor, name)


def positions(store: AuditStore) -> list[int]:
    return [r.position for r in AuditLog(store).list(AuditFilters(limit=1000), Scope(cluster_admin=True))]


def test_a_process_killed_before_commit_replays_every_event_exactly_once(tmp_path):
    path = tmp_path / "audit.duckdb"
    crashed = subprocess.run([sys.executable, "-c", CRASH_AT_COMMIT, str(path)], cwd=ROOT, capture_output=True)
    assert crashed.returncode == 17, crashed.stderr.decode()
    store = AuditStore(path)
    projection = AuditProjection(store, "c1")
    assert projection.position == 5
    log = sample_log()
    projection.apply(log.events)
    assert positions(store) == list(range(1, len(log.events) + 1))
    store.close()


def test_a_failed_write_leaves_nothing_behind_and_the_retry_lands_once(store):
    log = sample_log()
    projection = AuditProjection(store, "c1")
    projection.apply(log.events[:5])
    plain = store.connection
    store.connection = CrashAtCommit(plain, lambda: (_ for _ in ()).throw(OSError("disk went away")))
    with pytest.raises(OSError, match="disk went away"):
        projection.apply(log.events[5:])
    store.connection = plain
    assert (projection.position, store.position("c1"), positions(store)) == (5, 5, [1, 2, 3, 4, 5])
    projection.apply(log.events[3:])
    assert positions(store) == list(range(1, len(log.events) + 1))

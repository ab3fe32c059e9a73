"""The cold index: one row per workflow that left the views' hot set, on disk, for the lists' cold part.

A workflow goes cold only once it has ended, so the row the views had then is final; the views write it here
(projections.hot_set) before they forget the workflow, and the lists page through these rows beside the hot ones
under the same order and cursor (projections.workflow_pages). Every process's views trim the same workflows and
write the same rows (an upsert by id), so one SQLite file serves every API process of a host, with the writer's
lock between them. Describe, events and logs of a cold workflow are read from the log (projections.cold_workflows);
this holds only what a list shows.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import msgspec

from projections.workflow_pages import ListQuery, full_key
from projections.workflows import WorkflowRow

SCHEMA = """
CREATE TABLE IF NOT EXISTS cold_workflows (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, status TEXT NOT NULL, organization_id TEXT NOT NULL,
    effective_inputs INTEGER NOT NULL, submitted_at REAL NOT NULL, row BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS cold_by_submitted ON cold_workflows (submitted_at, id);
CREATE INDEX IF NOT EXISTS cold_by_name ON cold_workflows (name, id);
"""
# order -> (ORDER BY, the row value a cursor compares, the comparison past the cursor)
ORDERS = {
    "-submitted": ("submitted_at DESC, id DESC", "(submitted_at, id)", "<"),
    "submitted": ("submitted_at, id", "(submitted_at, id)", ">"),
    "priority": ("effective_inputs DESC, -submitted_at DESC, id DESC", "(effective_inputs, -submitted_at, id)", "<"),
    "name": ("name, id", "(name, id)", ">"),
}
SCAN_BATCH = 500
SCAN_BUDGET = 20_000  # cold rows one list request reads at most (a caller who may see few of them pages on)
BUSY_SECONDS = 30.0  # another API process's write holds the file's lock this long at most


class ColdIndex:
    """Cold workflows' list rows in a SQLite file (":memory:" for tests)."""

    def __init__(self, path: str | Path) -> None:
        if str(path) != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), timeout=BUSY_SECONDS, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")  # a power cut may lose the last rows: removing views.snapshot rebuilds them
        self._db.executescript(SCHEMA)
        self._lock = threading.Lock()
        self._encode = msgspec.json.Encoder().encode
        self._decode = msgspec.json.Decoder(WorkflowRow).decode

    def write(self, rows: Iterable[WorkflowRow]) -> None:
        values = [(str(r.id), r.name, r.status, r.owner.organization_id, r.effective_inputs,
                   r.submitted_at.timestamp(), self._encode(r)) for r in rows]
        if values:
            with self._lock:  # one transaction a trim: one sync, however many rows
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    self._db.executemany("INSERT OR REPLACE INTO cold_workflows VALUES (?, ?, ?, ?, ?, ?, ?)", values)
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")

    def matching(self, query: ListQuery, keep: Callable[[WorkflowRow], bool] | None, most: int,
                 organization: str | None = None) -> tuple[list[WorkflowRow], list[Any] | None]:
        """The first `most` rows in the query's order past its cursor that the query and `keep` select, and,
        when SCAN_BUDGET rows were read before `most` were found, the full key of the last one read (the rest
        comes after it); `organization` narrows the scan to one organization's rows."""
        order, key, past = ORDERS[query.order_by]
        where, params = _filters(query, organization)
        if query.after is not None:
            where.append(f"{key} {past} ({', '.join('?' * len(query.after))})")
            params += query.after
        sql = f"SELECT row FROM cold_workflows{' WHERE ' + ' AND '.join(where) if where else ''} ORDER BY {order}"
        found: list[WorkflowRow] = []
        read, last = 0, None
        with self._lock:
            cursor = self._db.execute(sql, params)
            while len(found) < most and read < SCAN_BUDGET and (batch := cursor.fetchmany(SCAN_BATCH)):
                rows = [self._decode(blob) for (blob,) in batch]
                found += [r for r in rows if keep is None or keep(r)]
                read, last = read + len(rows), rows[-1]
        stopped = len(found) < most and read >= SCAN_BUDGET and last is not None
        return found[:most], full_key(query.order_by, last) if stopped and last is not None else None

    def written_after(self, rowid: int, most: int) -> list[tuple[int, WorkflowRow]]:
        """Up to `most` rows in the order they were (last) written, after `rowid`: the order workflows went cold,
        which the retention (adapters.retention) follows."""
        with self._lock:
            rows = self._db.execute("SELECT rowid, row FROM cold_workflows WHERE rowid > ? ORDER BY rowid LIMIT ?",
                                    (rowid, most)).fetchall()
        return [(at, self._decode(blob)) for at, blob in rows]

    def count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM cold_workflows").fetchone()[0])

    def close(self) -> None:
        self._db.close()

def _filters(query: ListQuery, organization: str | None) -> tuple[list[str], list[Any]]:
    where: list[str] = []
    params: list[Any] = []
    for clause, value in (("status = ?", query.status.upper() if query.status else None),
                          ("organization_id = ?", organization),
                          ("submitted_at >= ?", query.since.timestamp() if query.since else None),
                          ("submitted_at < ?", query.until.timestamp() if query.until else None)):
        if value is not None:
            where.append(clause)
            params.append(value)
    if query.q:
        where.append("(instr(lower(name), ?) > 0 OR id LIKE ? ESCAPE '\\')")
        escaped = query.q.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        params += [query.q.lower(), escaped + "%"]
    return where, params

"""The audit read side on DuckDB: filtered lists, tenant-scoped read-only SQL and Parquet export.

What a reader may see is decided in projections.audit (`Scope`); this module turns it into SQL over the
store of adapters.duckdb_store, checks user SQL with adapters.sql_guard, and runs it in adapters.audit_sandbox:
a process of its own, bounded in memory, CPU and time, over a copy of only the rows the reader may see.
"""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import msgspec

from adapters.audit_sandbox import Limits, Sandbox, SandboxFailed
from adapters.duckdb_store import COLUMNS, AuditStore
from adapters.sql_guard import check_select
from projections.audit import (
    AuditFilters,
    AuditMoved,
    AuditRow,
    QueryFailed,
    QueryResult,
    Scope,
    scope_organization,
    visible_organization,
)


class AuditLog:
    """The audit read side: filtered lists, tenant-scoped read-only SQL and Parquet export."""

    def __init__(self, store: AuditStore, *, max_rows: int = 10_000, timeout_seconds: float = 10.0,
                 limits: Limits | None = None) -> None:
        self.store = store
        self.max_rows = max_rows
        self.timeout_seconds = timeout_seconds
        self.sandbox = Sandbox(dataclasses.replace(limits or Limits(), seconds=timeout_seconds))
        self.retention: Any = None  # the event stream's retention beside this audit (adapters.retention), if any

    def list(self, filters: AuditFilters, scope: Scope) -> list[AuditRow]:
        where, params = _where(filters, visible_organization(filters, scope))
        order = "DESC" if filters.descending else "ASC"
        sql = f"{_select(where)} ORDER BY position {order}, cluster {order} LIMIT {int(max(filters.limit, 0))}"
        with _open(), self.store.connection.cursor() as cursor:
            rows = cursor.execute(sql, params).fetchall()
        return [_audit_row(row) for row in rows]

    def query(self, sql: str, scope: Scope) -> QueryResult:
        """Run one read-only SELECT over `audit`, the caller's rows only; see adapters.sql_guard and audit_sandbox."""
        organization = scope_organization(scope)
        with _open(), self.store.connection.cursor() as cursor:
            check_select(sql, cursor, self.store.reserved_names())
        where, params = _where(AuditFilters(), organization)
        with tempfile.TemporaryDirectory(prefix="roving-audit-rows-") as scratch:
            rows = Path(scratch) / "rows.parquet"
            with _open():
                self.store.copy_to_parquet(f"{_select(where)} ORDER BY position, cluster", params, rows)
            try:
                columns, found = self.sandbox.run(rows, sql, self.max_rows)
            except SandboxFailed as error:
                raise QueryFailed(str(error), error.reason) from None
        return QueryResult(columns, found[: self.max_rows], truncated=len(found) > self.max_rows)

    def export_parquet(self, path: str | Path, filters: AuditFilters, scope: Scope) -> None:
        """Every row the filters select (the page limit does not apply), in position order, as Parquet."""
        where, params = _where(filters, visible_organization(filters, scope))
        with _open():
            self.store.copy_to_parquet(f"{_select(where)} ORDER BY position, cluster", params, path)


@contextlib.contextmanager
def _open() -> Iterator[None]:
    """A read the audit's hand-over cut off (the store closed under it) is said as such, not as a failure."""
    try:
        yield
    except duckdb.ConnectionException as error:
        raise AuditMoved(f"the audit moved to another worker while answering ({error}); ask again") from None

def _where(filters: AuditFilters, organization: str | None) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []

    def add(clause: str, value: Any) -> None:
        params.append(value)
        clauses.append(clause.replace("?", f"${len(params)}"))

    equal: dict[str, object] = {"principal": filters.principal, "event_type": filters.event_type, "workflow": filters.workflow,
             "organization": organization, "cluster": filters.cluster}
    for column, value in equal.items():
        if value is not None:
            add(f"{column} = ?", value)
    if filters.node is not None:
        add("(node = ? OR list_contains(string_split(node, ','), ?))", filters.node)
    for clause, value in (("time >= ?", filters.since), ("time < ?", filters.until), ("position > ?", filters.after)):
        if value is not None:
            add(clause, value)
    if filters.resume is not None:  # (position, cluster) past the cursor's: several clusters share a position
        position, cluster = filters.resume
        params += [position, position, cluster]
        n, past = len(params), "<" if filters.descending else ">"  # newest first: past the cursor is older
        clauses.append(f"(position {past} ${n - 2} OR (position = ${n - 1} AND cluster {past} ${n}))")
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def _select(where: str) -> str:
    return f"SELECT {', '.join(COLUMNS)} FROM audit_events{where}"


def _audit_row(row: tuple[Any, ...]) -> AuditRow:
    values = dict(zip(COLUMNS, row, strict=True))
    values["payload"] = msgspec.json.decode(values["payload"]) if values["payload"] else {}
    return AuditRow(**values)

"""The audit projection: every event of the log, once, as a typed row in DuckDB.

Rows carry who (principal, role, source), when, what (aggregate kind and id, version, event type)
and whose (organization, group, workflow, node). Events that do not repeat their owner (a workflow's
later events, an allocation's events) inherit it through a lineage map (aggregate -> owner) that is
read back from the stored rows, so a restarted projection attributes them the same way.
"""

from __future__ import annotations

import datetime as dt
import functools
import threading
from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from typing import Any

import duckdb
import msgspec
from eventsourcing.persistence import Notification

from adapters.duckdb_store import COLUMNS, AuditStore
from adapters.sql_guard import check_select
from adapters.jetstream.subjects import kind_of
from adapters.transcoder import MsgspecTranscoder

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
MICROSECOND = dt.timedelta(microseconds=1)
SYSTEM_SOURCES = frozenset({"admin", "monitoring", "provisioner", "scheduler", "agent"})
HEADER_FIELDS = ("originator_id", "originator_version", "timestamp", "originator_topic")
Lineage = tuple[str | None, str | None, str | None]


def _to_builtin(value: Any) -> Any:
    """Payload values msgspec's JSON encoder does not know (ext-decoded custom types) become text."""
    return str(value)


class AuditProjection:
    """Fed batches of (position, notification) from one cluster's log; writes rows and position together."""

    def __init__(self, store: AuditStore, cluster: str) -> None:
        self.store = store
        self.cluster = cluster
        self.position = store.position(cluster)
        self._lineage: dict[str, Lineage] = store.lineage()
        self._decode = MsgspecTranscoder().decode
        self._encode = msgspec.json.Encoder(enc_hook=_to_builtin).encode
        self._topics: dict[str, tuple[str, str]] = {}

    def apply(self, batch: Sequence[tuple[int, Notification]]) -> int:
        """Write the events past the recorded position; returns how many were new."""
        fresh = [(position, n) for position, n in batch if position > self.position]
        if not fresh:
            return 0
        pending: dict[str, Lineage] = {}
        rows = [self._row(position, n, pending) for position, n in fresh]
        self.store.write(self.cluster, rows, fresh[-1][0])
        self._lineage.update(pending)
        self.position = fresh[-1][0]
        return len(fresh)

    def _row(self, position: int, notification: Notification, pending: dict[str, Lineage]) -> bytes:
        state = self._decode(notification.state)
        event_type, kind = self._topic(notification.topic)
        aggregate_id = str(notification.originator_id)
        principal, role, source = _who(state)
        workflow, organization, group = self._owner(kind, aggregate_id, state, pending)
        when = state.get("at") or state.get("timestamp") or EPOCH
        for field in HEADER_FIELDS:
            state.pop(field, None)
        return self._encode({
            "position": position, "cluster": self.cluster, "time": _micros(when), "aggregate_kind": kind,
            "aggregate_id": aggregate_id, "version": notification.originator_version, "event_type": event_type,
            "principal": principal, "role": role, "source": source, "organization": organization,
            "group_name": group, "workflow": workflow, "node": _node(kind, aggregate_id, state), "payload": _redacted(state),
        })

    def _topic(self, topic: str) -> tuple[str, str]:
        known = self._topics.get(topic)
        if known is None:
            known = self._topics[topic] = (topic.rpartition(":")[2], kind_of(topic))
        return known

    def _owner(self, kind: str, aggregate_id: str, state: dict[str, Any], pending: dict[str, Lineage]) -> Lineage:
        """(workflow, organization, group) from the event itself, else from what earlier events said."""
        owner = state.get("owner")
        if isinstance(owner, dict):
            workflow = aggregate_id if kind == "workflow" else _text(state.get("workflow_id"))
            pending[aggregate_id] = (workflow, _text(owner.get("organization_id") or owner.get("organization")),
                                     _text(owner.get("group_id") or owner.get("group")))
            return pending[aggregate_id]
        parent = state.get("workflow_id")
        if parent is not None:
            workflow = str(parent)
            _, organization, group = pending.get(workflow) or self._lineage.get(workflow) or (None, None, None)
            pending[aggregate_id] = (workflow, organization, group)
            return pending[aggregate_id]
        known = pending.get(aggregate_id) or self._lineage.get(aggregate_id)
        if known is not None:
            return known
        organization = state.get("organization_id") or state.get("organization")
        return (aggregate_id if kind == "workflow" else None), _text(organization), _text(state.get("group"))


def _who(state: dict[str, Any]) -> tuple[str | None, str | None, str | None]:
    """principal, role, source: `by` may be a name or a {principal, role, source} mapping."""
    by = state.get("by")
    if isinstance(by, dict):
        return _text(by.get("principal")), _text(by.get("role")), _text(by.get("source"))
    principal = _text(by)
    source = _text(state.get("source")) or (principal if principal in SYSTEM_SOURCES else None)
    return principal, _text(state.get("role")), source


def _node(kind: str, aggregate_id: str, state: dict[str, Any]) -> str | None:
    if kind == "node":
        return aggregate_id
    node = state.get("node")
    if node is not None:
        return _text(node)
    nodes = state.get("nodes")
    if isinstance(nodes, (list, tuple)) and nodes:
        return ",".join(str(n) for n in nodes)
    return None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, Enum):
        return str(value.value)
    return str(value)


def _micros(when: Any) -> int:
    if not isinstance(when, dt.datetime):
        return 0
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return (when - EPOCH) // MICROSECOND


class Scope(msgspec.Struct, frozen=True):
    """Who is reading: a cluster admin sees every row; an organization owner sees their organization's."""

    organization: str | None = None
    cluster_admin: bool = False


class AuditFilters(msgspec.Struct, frozen=True, kw_only=True):
    """Filters for `AuditLog.list`; `after` pages on by position, `limit` caps a page (not exports)."""

    since: dt.datetime | None = None
    until: dt.datetime | None = None
    principal: str | None = None
    event_type: str | None = None
    node: str | None = None
    workflow: str | None = None
    organization: str | None = None
    cluster: str | None = None
    after: int | None = None
    limit: int = 100
    descending: bool = False


class AuditRow(msgspec.Struct, frozen=True):
    position: int
    cluster: str
    time: dt.datetime
    aggregate_kind: str
    aggregate_id: str
    version: int
    event_type: str
    principal: str | None
    role: str | None
    source: str | None
    organization: str | None
    group_name: str | None
    workflow: str | None
    node: str | None
    payload: dict[str, Any]


class AccessDenied(PermissionError):
    """The reader's scope does not cover what they asked for."""


class QueryFailed(ValueError):
    """A checked query that DuckDB could not run (bad column, type error, timeout)."""


class AuditLog:
    """The audit read side: filtered lists, tenant-scoped read-only SQL and Parquet export."""

    def __init__(self, store: AuditStore, *, max_rows: int = 10_000, timeout_seconds: float = 10.0) -> None:
        self.store = store
        self.max_rows = max_rows
        self.timeout_seconds = timeout_seconds

    def list(self, filters: AuditFilters, scope: Scope) -> list[AuditRow]:
        where, params = _where(filters, _visible_organization(filters, scope))
        order = "DESC" if filters.descending else "ASC"
        sql = f"{_select(where)} ORDER BY position {order}, cluster LIMIT {int(max(filters.limit, 0))}"
        with self.store.connection.cursor() as cursor:
            rows = cursor.execute(sql, params).fetchall()
        return [_audit_row(row) for row in rows]

    def query(self, sql: str, scope: Scope) -> QueryResult:
        """Run one read-only SELECT over `audit`, the caller's view of the table; see adapters.sql_guard."""
        cursor = self.store.scoped_cursor(_scope_organization(scope))
        try:
            check_select(sql, cursor, self.store.reserved_names())
            return self._run(cursor, sql)
        finally:
            cursor.close()

    def export_parquet(self, path: str | Path, filters: AuditFilters, scope: Scope) -> None:
        """Every row the filters select (the page limit does not apply), in position order, as Parquet."""
        where, params = _where(filters, _visible_organization(filters, scope))
        self.store.copy_to_parquet(f"{_select(where)} ORDER BY position, cluster", params, path)

    def _run(self, cursor: Any, sql: str) -> QueryResult:
        timer = threading.Timer(self.timeout_seconds, cursor.interrupt)
        timer.start()
        try:
            result = cursor.execute(sql)
            columns = [d[0] for d in result.description]
            rows = result.fetchmany(self.max_rows + 1)
        except duckdb.InterruptException as error:
            raise QueryFailed(f"the query ran past {self.timeout_seconds:g}s and was stopped") from error
        except duckdb.Error as error:
            raise QueryFailed(f"the query failed: {error}") from error
        finally:
            timer.cancel()
        return QueryResult(columns, rows[: self.max_rows], truncated=len(rows) > self.max_rows)


class QueryResult(msgspec.Struct, frozen=True):
    columns: list[str]
    rows: list[tuple[Any, ...]]
    truncated: bool = False


def _scope_organization(scope: Scope) -> str | None:
    """None means every row (cluster admin); otherwise the one organization the reader owns."""
    if scope.cluster_admin:
        return None
    if not scope.organization:
        raise AccessDenied("reading the audit log needs a cluster admin or an organization owner")
    return scope.organization


def _visible_organization(filters: AuditFilters, scope: Scope) -> str | None:
    own = _scope_organization(scope)
    if own is not None and filters.organization not in (None, own):
        raise AccessDenied(f"the owner of {own} cannot read the audit log of {filters.organization}")
    return own if own is not None else filters.organization


def _where(filters: AuditFilters, organization: str | None) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []

    def add(clause: str, value: Any) -> None:
        params.append(value)
        clauses.append(clause.replace("?", f"${len(params)}"))

    equal = {"principal": filters.principal, "event_type": filters.event_type, "workflow": filters.workflow,
             "organization": organization, "cluster": filters.cluster}
    for column, value in equal.items():
        if value is not None:
            add(f"{column} = ?", value)
    if filters.node is not None:
        add("(node = ? OR list_contains(string_split(node, ','), ?))", filters.node)
    for clause, value in (("time >= ?", filters.since), ("time < ?", filters.until), ("position > ?", filters.after)):
        if value is not None:
            add(clause, value)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def _select(where: str) -> str:
    return f"SELECT {', '.join(COLUMNS)} FROM audit_events{where}"


def _audit_row(row: tuple[Any, ...]) -> AuditRow:
    values = dict(zip(COLUMNS, row))
    values["payload"] = msgspec.json.decode(values["payload"]) if values["payload"] else {}
    return AuditRow(**values)


SECRET_HINTS = ("password", "secret", "token", "credential")


@functools.lru_cache(maxsize=4096)  # event field names are few; every row asks about each of its fields
def _secret(field: str) -> bool:
    return any(hint in field.lower() for hint in SECRET_HINTS)


def _redacted(state: dict[str, Any]) -> dict[str, Any]:
    """Audit rows never carry secrets, not even hashed: the log keeps them, the audit view does not."""
    return {k: ("[redacted]" if _secret(k) else v) for k, v in state.items()}

"""The audit projection: every event of the log, once, as a typed row; and what a reader may ask of them.

Rows carry who (principal, role, source), when, what (aggregate kind and id, version, event type)
and whose (organization, group, workflow, node). Events that do not repeat their owner (a workflow's
later events, an allocation's events) inherit it through a lineage map (aggregate -> owner) that is
read back from the stored rows, so a restarted projection attributes them the same way. The map holds the most
recent LINEAGE_KEPT aggregates; an older aggregate's owner is read back from its rows when one of its events needs it,
so the feed's memory and restart do not grow with history.

The projection is handed decoded events and writes through the store it is given (adapters.duckdb_store);
the feed (adapters.audit_feed) reads and decodes the log, the queries run in adapters.audit_log.
"""

from __future__ import annotations

import datetime as dt
from collections import OrderedDict
from collections.abc import Iterable
from enum import Enum
from typing import Any, NamedTuple, Protocol

import msgspec

from projections.redaction import redact

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
MICROSECOND = dt.timedelta(microseconds=1)
SYSTEM_SOURCES = frozenset({"admin", "monitoring", "provisioner", "scheduler", "agent"})
HEADER_FIELDS = frozenset({"originator_id", "originator_version", "timestamp", "originator_topic"})
Lineage = tuple[str | None, str | None, str | None]
LINEAGE_KEPT = 100_000  # aggregates whose owner the projection keeps in memory (the rows keep every one)
UNATTRIBUTED_KEPT = 10_000


def _to_builtin(value: Any) -> Any:
    """Payload values msgspec's JSON encoder does not know (ext-decoded custom types) become text."""
    return str(value)


class LoggedEvent(NamedTuple):
    """One event of the log as the audit reads it: its state decoded to plain values, not a domain object,
    so every event is audited, even one whose class this build no longer has."""

    originator_id: Any
    originator_version: int
    topic: str
    kind: str  # the aggregate kind its subject names, e.g. `workflow`
    state: dict[str, Any]


class AuditRows(Protocol):
    """The audit's storage: rows and each cluster's position, written together (adapters.duckdb_store)."""

    def position(self, cluster: str) -> int: ...

    def lineage(self, most: int | None = None) -> dict[str, Lineage]: ...

    def lineage_of(self, aggregate_id: str) -> Lineage | None: ...

    def write(self, cluster: str, rows: list[bytes], position: int) -> None: ...


class AuditProjection:
    """Fed batches of (position, LoggedEvent) from one cluster's log; writes rows and position together."""

    def __init__(self, store: AuditRows, cluster: str) -> None:
        self.store = store
        self.cluster = cluster
        self.position = store.position(cluster)
        # the most recent aggregates' lineage; an older one's is read back from the rows when an event needs it
        self._lineage: OrderedDict[str, Lineage] = OrderedDict(reversed(store.lineage(LINEAGE_KEPT).items()))
        self._unattributed: OrderedDict[str, None] = OrderedDict()  # asked of the rows and not found (nodes...)
        self._encode = msgspec.json.Encoder(enc_hook=_to_builtin).encode

    def apply(self, batch: Iterable[tuple[int, LoggedEvent]]) -> int:
        """Write the events past the recorded position; returns how many were new.

        One pass, so a batch decoded lazily keeps one decoded event alive at a time, not thousands (the
        collector's passes over them cost a third of the ingest rate)."""
        pending: dict[str, Lineage] = {}
        rows, last = [], self.position
        for position, event in batch:
            if position > self.position:
                rows.append(self._row(position, event, pending))
                last = position
        if not rows:
            return 0
        self.store.write(self.cluster, rows, last)
        for aggregate_id, lineage in pending.items():
            self._remember(aggregate_id, lineage)
        self.position = last
        return len(rows)

    def _row(self, position: int, event: LoggedEvent, pending: dict[str, Lineage]) -> bytes:
        state, kind = event.state, event.kind
        aggregate_id = str(event.originator_id)
        principal, role, source = _who(state)
        workflow, organization, group = self._owner(kind, aggregate_id, state, pending)
        when = state.get("at") or state.get("timestamp") or EPOCH
        return self._encode({
            "position": position, "cluster": self.cluster, "time": _micros(when), "aggregate_kind": kind,
            "aggregate_id": aggregate_id, "version": event.originator_version, "event_type": event.topic.rpartition(":")[2],
            "principal": principal, "role": role, "source": source, "organization": organization,
            "group_name": group, "workflow": workflow, "node": _node(kind, aggregate_id, state), "payload": _redacted(state),
        })

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
            _, organization, group = pending.get(workflow) or self._known(workflow) or (None, None, None)
            pending[aggregate_id] = (workflow, organization, group)
            return pending[aggregate_id]
        known = pending.get(aggregate_id) or self._known(aggregate_id)
        if known is not None:
            return known
        organization = state.get("organization_id") or state.get("organization")
        return (aggregate_id if kind == "workflow" else None), _text(organization), _text(state.get("group"))


    def _known(self, aggregate_id: str) -> Lineage | None:
        """What the aggregate's first attributed row said: from memory, else from the rows (once per miss)."""
        found = self._lineage.get(aggregate_id)
        if found is not None:
            self._lineage.move_to_end(aggregate_id)
            return found
        if aggregate_id in self._unattributed:
            return None
        found = self.store.lineage_of(aggregate_id)
        if found is None:
            self._unattributed[aggregate_id] = None
            if len(self._unattributed) > UNATTRIBUTED_KEPT:
                self._unattributed.popitem(last=False)
            return None
        self._remember(aggregate_id, found)
        return found

    def _remember(self, aggregate_id: str, lineage: Lineage) -> None:
        self._unattributed.pop(aggregate_id, None)
        self._lineage[aggregate_id] = lineage
        self._lineage.move_to_end(aggregate_id)
        if len(self._lineage) > LINEAGE_KEPT:
            self._lineage.popitem(last=False)


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
        when = when.replace(tzinfo=dt.UTC)
    micros: int = (when - EPOCH) // MICROSECOND
    return micros


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
    resume: tuple[int, str] | None = None  # a `next` cursor's (position, cluster): rows after it in log order


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


class QueryResult(msgspec.Struct, frozen=True):
    columns: list[str]
    rows: list[tuple[Any, ...]]
    truncated: bool = False


class AccessDenied(PermissionError):
    """The reader's scope does not cover what they asked for."""


class AuditMoved(RuntimeError):
    """The audit closed under a read: this worker stopped leading, and the next holder answers a retry."""


class QueryFailed(ValueError):
    """A checked query that could not finish; `reason` is error (bad column, type), time, memory or size."""

    def __init__(self, message: str, reason: str = "error") -> None:
        super().__init__(message)
        self.reason = reason


def scope_organization(scope: Scope) -> str | None:
    """None means every row (cluster admin); otherwise the one organization the reader owns."""
    if scope.cluster_admin:
        return None
    if not scope.organization:
        raise AccessDenied("reading the audit log needs a cluster admin or an organization owner")
    return scope.organization


def visible_organization(filters: AuditFilters, scope: Scope) -> str | None:
    own = scope_organization(scope)
    if own is not None and filters.organization not in (None, own):
        raise AccessDenied(f"the owner of {own} cannot read the audit log of {filters.organization}")
    return own if own is not None else filters.organization


def _redacted(state: dict[str, Any]) -> dict[str, Any]:
    """Audit rows never carry secrets, not even hashed (projections.redaction): the log keeps them, the audit
    view does not. Nor the fields every event has, which have columns of their own."""
    redacted: dict[str, Any] = redact({k: v for k, v in state.items() if k not in HEADER_FIELDS})
    return redacted

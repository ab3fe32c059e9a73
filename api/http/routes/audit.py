"""Audit routes: filtered rows, read-only SQL over the caller's view, and Parquet export.

A cluster admin reads every row; an organization owner reads their organization's rows; anyone else
is refused (403). Lists and exports run in the threadpool on cursors of the one shared AuditStore; SQL runs in
a bounded child process of its own (adapters.audit_sandbox), a few side by side.
"""

from __future__ import annotations

import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
from starlette.background import BackgroundTask
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Route

from adapters.sql_guard import RefusedQuery
from api.http.answers import AuditRows
from api.http.audit_forward import to_audit_owner
from api.http.errors import BadRequest, problem
from api.http.routes import common as c
from api.http.routes import paging
from domain.app import access
from domain.tenancy.permissions import Principal
from projections import workflow_pages as pages
from projections.audit import AccessDenied, AuditFilters, AuditMoved, QueryFailed, Scope

MAX_LIMIT = 10_000
FILTERS = ("since", "until", "principal", "event_type", "node", "workflow", "organization", "cluster", "after", "limit")
PARQUET = "application/vnd.apache.parquet"
ENCODER = msgspec.json.Encoder(enc_hook=str)  # DuckDB values JSON does not know (intervals, blobs) as text


class Query(msgspec.Struct, forbid_unknown_fields=True):
    sql: str


def scope_of(who: Principal) -> Scope:
    """What the caller may read: everything, one organization, or nothing (403)."""
    reach = access.audit_reach(who)
    return Scope(cluster_admin=True) if reach.everything else Scope(organization=reach.organization)


def audit_log(request: Request) -> Any:
    found = c.services(request).audit
    if found is None:
        raise HTTPException(503, "the audit log is not running in this control plane")
    return found


def filters_of(request: Request, known: tuple[str, ...] = FILTERS) -> AuditFilters:
    """Query parameters as AuditFilters; a bad value or an unknown parameter is a 400 naming the parameter."""
    c.only_params(request, known)
    raw = {name: request.query_params[name] for name in FILTERS if request.query_params.get(name)}
    try:
        filters = msgspec.convert(raw, AuditFilters, strict=False)
    except msgspec.ValidationError as error:
        path = str(error).rpartition("$.")[2].rstrip("`") or "query"
        raise BadRequest(path, str(error).partition(" - at ")[0]) from None
    if not 1 <= filters.limit <= MAX_LIMIT:
        raise BadRequest("limit", f"expected 1 to {MAX_LIMIT}, got {filters.limit}")
    return msgspec.structs.replace(filters, since=_utc(filters.since), until=_utc(filters.until))


def _utc(when: datetime | None) -> datetime | None:
    """A time given without an offset is UTC."""
    return when.replace(tzinfo=UTC) if when is not None and when.tzinfo is None else when


def refused(error: Exception) -> Response:
    if isinstance(error, AuditMoved):
        return problem(503, str(error))
    if isinstance(error, AccessDenied):
        return problem(403, str(error))
    if isinstance(error, QueryFailed):  # reason: error, time, memory or size (the limit it met)
        return problem(400, str(error), "sql", reason=error.reason)
    return problem(400, str(error), "sql")


async def list_rows(request: Request) -> Response:
    """In log order (`order=newest`: newest first), at most `limit` rows (default 100) and `next` while more remain."""
    scope, filters = scope_of(c.principal(request)), filters_of(request, (*FILTERS, "next", "order"))
    newest = newest_first(request)
    resume = paging.after(request, "audit-newest" if newest else "audit", [int, str])  # another order's: a 400
    wanted = msgspec.structs.replace(filters, limit=filters.limit + 1,  # one more: whether another page follows
                                     resume=(resume[0], resume[1]) if resume is not None else None, descending=newest)
    try:
        rows = await c.call(audit_log(request).list, wanted, scope)
    except (AccessDenied, AuditMoved) as error:
        return refused(error)
    # the store answered in the asked order, past the cursor; the cursor names its order, so it pages on only in it
    shown, more = pages.after_key(rows, row_key, "audit-newest" if newest else "audit", filters.limit, None)
    return c.json(AuditRows(rows=shown, next=more))


def newest_first(request: Request) -> bool:
    """`order=newest` (what a person reading recent activity wants), else `oldest`: log order, as exports are."""
    order = request.query_params.get("order", "oldest")
    if order not in ("oldest", "newest"):
        raise BadRequest("order", f"expected oldest or newest, got {order!r}")
    return order == "newest"


def row_key(row: Any) -> list[Any]:
    return [row.position, row.cluster]


async def query(request: Request) -> Response:
    scope, wanted = scope_of(c.principal(request)), await c.body(request, Query)
    audit = audit_log(request)
    try:
        result = await c.call(audit.query, wanted.sql, scope)
    except (RefusedQuery, QueryFailed, AccessDenied, AuditMoved) as error:
        return refused(error)
    body = {"columns": result.columns, "rows": result.rows, "truncated": result.truncated}
    return Response(ENCODER.encode(body), media_type="application/json")


async def export_parquet(request: Request) -> Response:
    """Every row the filters select (no page limit), as one Parquet file; the temporary copy goes after sending."""
    scope, filters = scope_of(c.principal(request)), filters_of(request)
    scratch = Path(tempfile.mkdtemp(prefix="roving-audit-download-"))
    path = scratch / "audit.parquet"
    try:
        await c.call(audit_log(request).export_parquet, path, filters, scope)
    except BaseException as error:
        shutil.rmtree(scratch, ignore_errors=True)
        if isinstance(error, (AccessDenied, AuditMoved)):
            return refused(error)
        raise
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return FileResponse(path, media_type=PARQUET, filename=f"audit-{stamp}.parquet",
                        background=BackgroundTask(shutil.rmtree, scratch, ignore_errors=True))


async def retention(request: Request) -> Response:
    """The event stream's retention (cluster admins): the policy, the stream's size, what was archived."""
    if not c.principal(request).is_cluster_admin:
        raise HTTPException(403, "the event stream's retention is shown to cluster admins")
    running = audit_log(request).retention
    if running is None:
        raise HTTPException(503, "the retention is not running in this control plane")
    return c.json(await c.call(running.status))


routes = [
    Route("/v4/audit", to_audit_owner(list_rows), methods=["GET"]),
    Route("/v4/audit/retention", to_audit_owner(retention), methods=["GET"]),
    Route("/v4/audit/query", to_audit_owner(query), methods=["POST"]),
    Route("/v4/audit/export.parquet", to_audit_owner(export_parquet), methods=["GET"]),
]

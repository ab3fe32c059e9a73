"""Scheduler routes: the queue (cluster-wide for admins, your own for everyone else) and its stats."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from api.errors import BadRequest
from api.routes import common as c
from domain.app import access

STATES = ("PENDING", "READY", "RUNNING", "FINISHED", "FAILED", "CANCELED", "PREEMPTED", "EVICTED")
DEFAULT_LIMIT, MAX_LIMIT = 500, 10_000


def limit(request: Request) -> int:
    raw = request.query_params.get("limit")
    if raw in (None, ""):
        return DEFAULT_LIMIT
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_LIMIT:
        raise BadRequest("limit", f"expected a whole number from 1 to {MAX_LIMIT}, got {raw!r}")
    return int(raw)


def priority_min(request: Request) -> float | None:
    raw = request.query_params.get("priority_min")
    if raw in (None, ""):
        return None
    try:
        return float(raw)
    except ValueError:
        raise BadRequest("priority_min", f"expected a number, got {raw!r}") from None


def state(request: Request) -> str | None:
    raw = request.query_params.get("queue") or request.query_params.get("state")
    if raw and raw.upper() not in STATES:
        raise BadRequest("queue", f"unknown queue {raw!r}; use one of {', '.join(STATES)}")
    return raw.upper() if raw else None


async def queue(request: Request) -> Response:
    """Non-admins always get `mine=true`: the server decides, whatever the client asked."""
    who, views = c.principal(request), c.services(request).views
    cluster_wide = access.sees_cluster_queue(who)
    mine = c.query_bool(request, "mine") or not cluster_wide
    user_id = str(who.user_id) if mine and who.user_id else None
    if mine and who.user_id is None:
        return c.json({"queue": [], "mine": True})
    wanted, most = state(request), limit(request)
    live_only = wanted is None and not c.query_bool(request, "all")  # what waits or runs; ?all=true adds history
    rows, total = await c.call(views.queue.page, state=wanted, owner=request.query_params.get("owner") or None,
                               priority_min=priority_min(request), user_id=user_id, limit=most, live_only=live_only)
    return c.json({"queue": rows, "total": total, "limit": most, "mine": mine})


async def stats(request: Request) -> Response:
    return c.json(await c.call(c.services(request).views.queue.stats))


routes = [
    Route("/v4/scheduler/queue", queue, methods=["GET"]),
    Route("/v4/scheduler/stats", stats, methods=["GET"]),
]

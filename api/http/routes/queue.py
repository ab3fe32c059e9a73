"""Scheduler routes: the queue (cluster-wide for admins, your own for everyone else) and its stats.

On a federated control plane (api.http.fanout) both cover every cluster of the federation: each row and each
figure carries its `cluster`, `clusters` says for each whether it can be asked and how old its data is
(`stale`, `last_event_age_seconds`), and `?cluster=` (repeated or comma-separated) scopes them. A tenant
sees only their own rows on every cluster, decided by domain.app.access as for this cluster's.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from api.http import scheduled
from api.http.answers import QueuePage, QueueStats, answers
from api.http.answers.work import QueueEntry, queue_entry
from api.http.errors import BadRequest
from api.http.fanout import Fanout, fanout
from api.http.routes import common as c
from api.http.routes.names import Names, names
from domain.app import access
from projections.projects import SharedRow
from projections.queue_rows import QueueRow

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


@answers(QueuePage)
async def queue(request: Request) -> Response:
    """Non-admins always get `mine=true`: the server decides, whatever the client asked."""
    who = c.principal(request)
    cluster_wide = access.sees_cluster_queue(who)
    mine = c.query_bool(request, "mine") or not cluster_wide
    user_id = str(who.user_id) if mine and who.user_id else None
    wanted, most = state(request), limit(request)
    live_only = wanted is None and not c.query_bool(request, "all")  # what waits or runs; ?all=true adds history
    filters = {"state": wanted, "owner": request.query_params.get("owner") or None,
               "priority_min": priority_min(request), "user_id": user_id, "limit": most, "live_only": live_only}
    fan = await fanout(request)
    if mine and who.user_id is None:
        return c.json(QueuePage(queue=[], mine=True))
    if fan is None:
        views = c.services(request).views
        rows, total = await c.call(views.queue.page, **filters, ranked=scheduled.ranked(request))
        return c.json(QueuePage(queue=with_names(rows, names(request, views)), total=total, limit=most, mine=mine))
    merged: list[QueueEntry] = []
    clusters = []
    for cluster in fan.scope:
        found, counted = await cluster_page(fan, cluster, who, {**filters, "ranked": scheduled.ranked(
            request, local=cluster == fan.local)})
        merged += found
        clusters.append({**fan.summary(cluster), "total": counted})
    merged.sort(key=lambda e: (-e.priority, e.queued_at, e.id))
    return c.json(QueuePage(queue=merged[:most], total=sum(x["total"] or 0 for x in clusters), limit=most, mine=mine,
                            clusters=clusters, hub=fan.hub_answer()))


def with_names(rows: list[QueueRow], known: Names) -> list[QueueEntry]:
    """Each row with its user's and group's names beside the ids (`user`, `group`; None when not known)."""
    return [queue_entry(row, known.user(row.user_id), known.group(row.group_id)) for row in rows]


async def cluster_page(fan: Fanout, cluster: str, who: Any, filters: dict[str, Any]) -> tuple[list[QueueEntry], int | None]:
    """One cluster's matching rows, labelled with it, and how many match there (None: nothing to ask)."""
    views = fan.views(cluster)
    if views is None:
        return [], None
    found, total = await c.call(views.queue.page, **filters)
    if cluster != fan.local:  # another cluster's rows pass the same visibility decision as this cluster's work
        visible = [r for r in found if access.visible(who, access.work(r, "allocation"))]
        found, total = visible, total - (len(found) - len(visible))
    known = Names(who, getattr(views, "tenancy", None))  # the names that cluster's views know, as the caller may see
    return [queue_entry(r, known.user(r.user_id), known.group(r.group_id), cluster) for r in found], total


@answers(QueueStats)
async def stats(request: Request) -> Response:
    fan = await fanout(request)
    here, last = c.services(request).views, scheduled.last_pass(request)
    shared = await c.call(shared_use, here)
    if fan is None:
        figures = await c.call(scheduled.queue_stats, here, last)
        return c.json(QueueStats(depth=figures["depth"], total=figures["total"], priority=figures["priority"],
                                 last_pass=figures["last_pass"], shared_resources=shared))
    clusters = []
    for cluster in fan.scope:
        views = fan.views(cluster)
        mine = last if cluster == fan.local else None  # another cluster's runner's figures are not in its log
        figures = await c.call(scheduled.queue_stats, views, mine) if views is not None else {"depth": {}, "total": None}
        clusters.append({**fan.summary(cluster), **figures})
    depth: dict[str, int] = {}
    for cluster_stats in clusters:
        for name, count in cluster_stats["depth"].items():
            depth[name] = depth.get(name, 0) + count
    figures = await c.call(scheduled.queue_stats, here, last)  # this cluster's scheduler, as unfederated
    return c.json(QueueStats(depth=depth, total=sum(x["total"] or 0 for x in clusters), priority=figures["priority"],
                             last_pass=figures["last_pass"], shared_resources=shared, clusters=clusters,
                             hub=fan.hub_answer()))


def shared_use(views: Any) -> list[SharedRow]:
    """This cluster's shared resources (licenses): total, in use, free and how many allocations hold some."""
    found = getattr(views, "projects", None)
    return list(found.shared()) if found is not None else []


routes = [
    Route("/v4/scheduler/queue", queue, methods=["GET"]),
    Route("/v4/scheduler/stats", stats, methods=["GET"]),
]

"""The Alertmanager webhook: firing alerts place monitoring holds, resolved ones release them."""

from __future__ import annotations

import asyncio
from typing import Any

import structlog
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from api import metrics
from api.http import answers as shapes
from api.http.answers import answers
from api.http.routes import common as c
from domain.alerts import REFUSED
from domain.holds import NodeSummary

log = structlog.get_logger("roving.alerts")


def peers(rows: list[Any]) -> dict[str, list[NodeSummary]]:
    """Nodes by definition with whether monitoring holds them: the application's ceiling check needs it."""
    found: dict[str, list[NodeSummary]] = {}
    for row in rows:
        held = any(h.source == "monitoring" for h in row.holds)
        found.setdefault(row.definition, []).append(NodeSummary(id=str(row.id), monitoring_held=held))
    return found


def count_refusals(outcomes: list[str]) -> None:
    """A hold the ceiling refused is logged with its reason and counted, so the rule and dashboard see it."""
    for outcome in outcomes:
        node, _, what = outcome.partition(": ")
        if what.startswith(REFUSED):
            metrics.HOLDS_REFUSED.inc()
            log.warning("alerts.monitoring_hold_refused", node=node, reason=what.removeprefix(REFUSED))


@answers(shapes.Outcomes)
async def receive(request: Request) -> Response:
    """One webhook call at a time in this process, each deciding on the views after the last one settled:
    Alertmanager posts each node's group at once, and two holds decided on the same view would both pass a
    ceiling that allows one (each saves only its own node, so no write race catches it)."""
    svc, payload = c.services(request), await request.body()
    async with one_at_a_time(request):
        rows = await c.call(svc.views.nodes.list)
        outcomes = await c.call(svc.roving.apply_alerts, payload, c.principal(request), c.now(), peers(rows))
        await c.settle(request)
    count_refusals(outcomes)
    return c.json({"outcomes": outcomes})


def one_at_a_time(request: Request) -> asyncio.Lock:
    state = request.app.state
    if getattr(state, "alerts_lock", None) is None:
        state.alerts_lock = asyncio.Lock()
    return state.alerts_lock


routes = [Route("/v4/alerts", receive, methods=["POST"])]

"""The Alertmanager webhook: firing alerts place monitoring holds, resolved ones release them."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from api.routes import common as c
from domain.holds import NodeSummary


def peers(rows: list[Any]) -> dict[str, list[NodeSummary]]:
    """Nodes by definition with whether monitoring holds them: the application's ceiling check needs it."""
    found: dict[str, list[NodeSummary]] = {}
    for row in rows:
        held = any(h.source == "monitoring" for h in row.holds)
        found.setdefault(row.definition, []).append(NodeSummary(id=str(row.id), monitoring_held=held))
    return found


async def receive(request: Request) -> Response:
    svc, payload = c.services(request), await request.body()
    rows = await c.call(svc.views.nodes.list)
    outcomes = await c.call(svc.roving.apply_alerts, payload, c.principal(request), c.now(), peers(rows))
    await c.settle(request)
    return c.json({"outcomes": outcomes})


routes = [Route("/v4/alerts", receive, methods=["POST"])]

"""The Alertmanager webhook: firing alerts place monitoring holds, resolved ones release them."""

from __future__ import annotations

from typing import Any

import structlog
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from api import metrics
from api.composition.refused_alerts import DECIDING, settled
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
    """Decided under the lock the refused-alerts loop takes too (api.composition.refused_alerts.DECIDING), each on
    views that show the last decision: Alertmanager posts each node's group at once."""
    svc, payload, who, at = c.services(request), await request.body(), c.principal(request), c.now()
    outcomes = await c.call(decide, svc, payload, who, at)
    count_refusals(outcomes)
    return c.json(shapes.Outcomes(outcomes=outcomes))


def decide(svc: Any, payload: bytes, who: Any, at: Any) -> list[str]:
    with DECIDING:
        rows = svc.views.nodes.list()
        outcomes = svc.roving.apply_alerts(payload, who, at, peers(rows))
        settled(svc.tailer if svc.tailer is not None and hasattr(svc.tailer, "wait_for") else svc.views, svc.roving)
    return outcomes


routes = [Route("/v4/alerts", receive, methods=["POST"])]

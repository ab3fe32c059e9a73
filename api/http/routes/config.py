"""Central configuration routes: read and change the cluster's ClusterConfig (cluster admins)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from api.http.answers import CentralConfig, ConfigChanged
from api.http.routes import common as c


async def show(request: Request) -> Response:
    return c.json(CentralConfig(**await c.call(c.services(request).roving.config, c.principal(request))))


async def change(request: Request) -> Response:
    """The body is the settings to change, e.g. `{"scheduler.interval": "5s"}`; warnings come back."""
    changes = await c.body(request, dict[str, Any])
    if "settings" in changes and isinstance(changes["settings"], dict) and len(changes) == 1:
        changes = changes["settings"]  # accept the shape GET answers with
    roving = c.services(request).roving
    warnings = await c.call(roving.change_config, changes, c.principal(request), c.now())
    await c.settle(request)
    current = await c.call(roving.config, c.principal(request))
    return c.json(ConfigChanged(**current, warnings=list(warnings or [])))


routes = [
    Route("/v4/admin/centralconfig", show, methods=["GET"]),
    Route("/v4/admin/centralconfig", change, methods=["PUT"]),
]

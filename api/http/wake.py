"""A request to an endpoint whose pool scaled to zero: it wakes a replica and waits for one to be ready, at most
`ROVING_WAKE_TIMEOUT` (then 503 with Retry-After, as for any endpoint with no ready replica)."""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import HTTPConnection
from starlette.responses import Response

from api.composition.autoscaling import wake
from api.http.errors import problem
from api.http.routes import common as c
from domain.endpoint import Endpoint

POLL_SECONDS = 0.1  # how often a waiting request looks at the endpoints view again
RETRY_AFTER = "5"  # seconds a refused caller is asked to wait: a woken replica may be just about ready


def not_serving(endpoint: Endpoint) -> Response:
    answer = problem(503, endpoint.not_serving_reason())
    answer.headers["Retry-After"] = RETRY_AFTER
    return answer


async def woken(request: HTTPConnection, endpoint: Endpoint, find: Any) -> Endpoint | None:
    """The endpoint once a replica of its pool is ready, or None: its pool cannot scale to zero (nothing to wait
    for), or none got ready within the bound. `find` reads the endpoint again from the views."""
    binding, svc = endpoint.binding, c.services(request)
    if binding is None:
        return None
    waits = await c.call(wake, svc.roving, svc.views, binding.workflow_id, binding.service, endpoint.name, c.now())
    if not waits:
        return None
    loop = asyncio.get_running_loop()
    deadline = loop.time() + request.app.state.settings.wake_seconds
    while loop.time() < deadline:
        await asyncio.sleep(POLL_SECONDS)
        found = await find(request)
        if found is not None and found.serving_target() is not None:
            return found
    return None

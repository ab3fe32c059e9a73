"""A request to an endpoint whose pool scaled to zero: it wakes a replica and waits for one to be ready, at most
`ROVING_WAKE_TIMEOUT` (then 503 with Retry-After, as for any endpoint with no ready replica)."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

import structlog
from starlette.requests import HTTPConnection
from starlette.responses import Response

from api.http.errors import problem
from api.http.routes import common as c
from domain.app import Conflict, NotFound
from domain.endpoint import Endpoint

log = structlog.get_logger("roving.autoscaler")

POLL_SECONDS = 0.1  # how often a waiting request looks at the endpoints view again
RETRY_AFTER = "5"  # seconds a refused caller is asked to wait: a woken replica may be just about ready


def pool_of(views: Any, workflow_id: Any, service: str) -> Any:
    """The autoscaled pool of `service` as the views have it now, or None."""
    view = views.workflows
    with view.lock:  # the tailer applies events to the mirrored workflow on its own thread
        workflow = view.workflow(workflow_id)
        return next((p for p in workflow.pools() if p.service == service), None) if workflow else None


def wake(roving: Any, views: Any, workflow_id: Any, service: str, endpoint: str, now: datetime) -> bool:
    """For a request through `endpoint`: whether its pool may scale to zero (then the request may wait for it), and,
    when it is at zero now, one replica asked for. Another request waking it first is no failure."""
    pool = pool_of(views, workflow_id, service)
    if pool is None or pool.rule.low != 0:
        return False
    if pool.size == 0:
        try:
            if roving.scale_service(workflow_id, service, 0, 1, f"woken by a request through endpoint {endpoint}",
                                    now, by="proxy"):
                log.info("autoscaler.woken", workflow=str(workflow_id), service=service, endpoint=endpoint)
        except (Conflict, NotFound) as error:
            log.info("autoscaler.wake_refused", workflow=str(workflow_id), service=service, reason=str(error))
    return True


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

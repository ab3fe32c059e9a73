"""`/metrics` for Prometheus, the HTTP request metrics every answer feeds, and a node's own metrics read through the
control plane (`/v4/metrics/node/{node}`: the agent's --metrics-port, found as service discovery finds it)."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import aiohttp
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, Counter, Histogram, generate_latest
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match, Route
from starlette.types import Scope

from api import metrics as gauges  # the control plane's series are exported by every API process, leader or not
from api.composition.services import Services
from api.http.errors import problem
from api.http.routes import common as c
from api.http.routes.nodes import LIVE, found
from domain.agent_address import url_host
from domain.app import access

REQUESTS = Counter("roving_http_requests_total", "HTTP requests answered", ["method", "route", "status"])
LATENCY = Histogram("roving_http_request_seconds", "HTTP request duration", ["method", "route"],
                    buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10))
NODE_SCRAPE = aiohttp.ClientTimeout(total=5.0)  # inside Prometheus's own default scrape timeout (10 s)
NODE_BODY_LIMIT = 4 * 2**20  # an agent's page is a few KB; the control plane holds no more than this of one


def route_of(scope: Scope) -> str:
    """The route template (`/v4/workflows/{id}`), never the raw path: ids would explode the label space."""
    router = getattr(scope.get("app"), "router", None)
    routes = getattr(router, "routes", [])
    # the router left the endpoint it chose in the scope: its route is checked alone (a full match there is the
    # router's own first full match), not every route in turn
    endpoint = scope.get("endpoint")
    first = _first_route_of(router, len(routes)).get(endpoint) if routes and isinstance(endpoint, Hashable) else None
    for route in [first] if first is not None and first.matches(scope)[0] is Match.FULL else routes:
        match, _ = route.matches(scope)
        if match is Match.FULL:
            return getattr(route, "path", "other")
    return "unmatched"


_FIRST_ROUTES: dict[int, tuple[Any, int, dict[Any, Any]]] = {}  # by id(router): (router, its route count, map)


def _first_route_of(router: Any, count: int) -> dict[Any, Any]:
    """Each endpoint's first route among the router's `count` (an app's routes are fixed once it is made; a router
    is not hashable, so it is kept by id with itself beside, which keeps the id its own)."""
    known = _FIRST_ROUTES.get(id(router))
    if known is not None and known[0] is router and known[1] == count:
        return known[2]
    found: dict[Any, Any] = {}
    for route in router.routes[:count]:
        endpoint = getattr(route, "endpoint", None) or getattr(route, "app", None)
        if isinstance(endpoint, Hashable):  # a mounted router is not: its requests are matched in turn
            found.setdefault(endpoint, route)
    if len(_FIRST_ROUTES) >= 16:  # test suites make many apps; a server makes one
        _FIRST_ROUTES.clear()
    _FIRST_ROUTES[id(router)] = (router, count, found)
    return found


def observe(scope: Scope, status: int, seconds: float) -> None:
    route = route_of(scope)
    REQUESTS.labels(scope["method"], route, str(status)).inc()
    LATENCY.labels(scope["method"], route).observe(seconds)


async def metrics(request: Request) -> Response:
    await run_in_threadpool(refresh, request.app.state.services)
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)


def refresh(svc: Services) -> None:
    """Queue, node and hold-ceiling gauges as the views show them now."""
    gauges.observe_views(svc.views, svc.roving.configuration.max_monitoring_percent())


async def node_metrics(request: Request) -> Response:
    """One node's metrics in Prometheus text, as its agent serves them. Cluster admins and the monitoring token
    only: a node's running and failure counts are every tenant's work on it, which `node show` hides from users."""
    access.node_metrics_reader(c.principal(request))
    row = await found(request, request.path_params["node"])
    if row.status not in LIVE:
        return problem(503, f"node {row.name} is {row.status}: its metrics cannot be read now", "node")
    if not row.port:
        return problem(404, f"node {row.name} serves no metrics (its agent runs without --metrics-port)", "node")
    if not row.address:
        return problem(404, f"node {row.name} registered no address (its agent runs with an empty --address)", "node")
    try:
        host = url_host(row.address)
    except ValueError as error:  # registered before addresses were checked: never a URL of its making
        return problem(502, f"node {row.name} registered an address the control plane will not fetch: {error}", "node")
    url = f"http://{host}:{row.port}/metrics"
    try:
        # a session a scrape: one request every scrape interval a node, and nothing left open between them; a
        # redirect is not followed (the agent serves its own page: anywhere else is a fetch the caller steered)
        async with (aiohttp.ClientSession(timeout=NODE_SCRAPE) as session,
                    session.get(url, allow_redirects=False) as answer):
            text = await answer.content.read(NODE_BODY_LIMIT + 1)
            status = answer.status
    except (aiohttp.ClientError, TimeoutError) as error:
        return problem(502, f"node {row.name}'s agent did not answer at {url}: {type(error).__name__}", "node")
    if status != 200 or len(text) > NODE_BODY_LIMIT:
        reason = f"HTTP {status}" if status != 200 else f"more than {NODE_BODY_LIMIT} bytes"
        return problem(502, f"node {row.name}'s agent answered {reason} at {url}", "node")
    return Response(text, media_type=CONTENT_TYPE_LATEST)


routes = [Route("/metrics", metrics, methods=["GET"]),
          Route("/v4/metrics/node/{node}", node_metrics, methods=["GET"])]

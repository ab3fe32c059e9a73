"""`/metrics` for Prometheus, and the HTTP request metrics every answer feeds."""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, Counter, Histogram, generate_latest
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match, Route
from starlette.types import Scope

from api import metrics as gauges  # the control plane's series are exported by every API process, leader or not
from api.composition.services import Services

REQUESTS = Counter("roving_http_requests_total", "HTTP requests answered", ["method", "route", "status"])
LATENCY = Histogram("roving_http_request_seconds", "HTTP request duration", ["method", "route"],
                    buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10))


def route_of(scope: Scope) -> str:
    """The route template (`/v4/workflows/{id}`), never the raw path: ids would explode the label space."""
    router = scope.get("app")
    for route in getattr(getattr(router, "router", None), "routes", []):
        match, _ = route.matches(scope)
        if match is Match.FULL:
            return getattr(route, "path", "other")
    return "unmatched"


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


routes = [Route("/metrics", metrics, methods=["GET"])]

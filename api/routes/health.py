"""Liveness and readiness: /healthz answers while the process serves; /readyz once the views caught up."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from api.routes import common as c


def caught_up(tailer: Any) -> bool:
    """The tailer's `caught_up` as an Event, a bool or a method; no tailer means not ready."""
    if tailer is None:
        return False
    flag = getattr(tailer, "caught_up", False)
    if hasattr(flag, "is_set"):
        return bool(flag.is_set())
    return bool(flag() if callable(flag) else flag)


async def healthz(request: Request) -> Response:
    return c.json({"status": "ok"})


async def readyz(request: Request) -> Response:
    svc = c.services(request)
    ready = caught_up(getattr(svc, "tailer", None))
    position = getattr(getattr(svc, "views", None), "position", None)
    return c.json({"ready": ready, "position": position}, status=200 if ready else 503)


routes = [
    Route("/healthz", healthz, methods=["GET"]),
    Route("/readyz", readyz, methods=["GET"]),
]

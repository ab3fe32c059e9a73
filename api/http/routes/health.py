"""Liveness and readiness: /healthz answers while the process serves; /readyz once the views caught up and
while the log takes writes (a load balancer stops sending commands that could only fail): 503 naming the cause
within seconds of a full disk, a frozen or an unreachable server, and 200 again once writes land."""

from __future__ import annotations

import os
import platform
from importlib import metadata
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from api.http.answers import Health, Readiness, Version, answers
from api.http.routes import common as c


def caught_up(tailer: Any) -> bool:
    """The tailer's `caught_up` as an Event, a bool or a method; no tailer means not ready."""
    if tailer is None:
        return False
    flag = getattr(tailer, "caught_up", False)
    if hasattr(flag, "is_set"):
        return bool(flag.is_set())
    return bool(flag() if callable(flag) else flag)


def log_connections(svc: Any) -> list[Any]:
    """The connections commands and leases use; services without them (unit tests' fakes) have none."""
    found = [getattr(svc.roving.recorder, "connection", None), getattr(svc.leases, "connection", None)]
    return [connection for connection in found if hasattr(connection, "reachable")]


def not_ready_because(svc: Any) -> str | None:
    if any(not connection.reachable for connection in log_connections(svc)):
        return "the log (NATS JetStream) is unreachable"
    probe = getattr(svc, "log_probe", None)  # a connection that is up may still take no writes (frozen, disk full)
    if probe is not None and (failure := probe.failure()):
        return failure
    if not caught_up(svc.tailer):
        return "the views are catching up with the log"
    return None


@answers(Health)
async def healthz(request: Request) -> Response:
    return c.json(Health(status="ok"))


@answers(Version)
async def version(request: Request) -> Response:
    return c.json(Version(version=package_version(), api="v4", python=platform.python_version()))


def package_version() -> str:
    try:
        return metadata.version("roving")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"


@answers(Readiness)
async def readyz(request: Request) -> Response:
    svc = c.services(request)
    reason = not_ready_because(svc)
    position = svc.views.position
    body = {"ready": reason is None, "position": position, **({"reason": reason} if reason else {}),
            "process": this_process(svc)}
    return c.json(body, status=200 if reason is None else 503)


def this_process(svc: Any) -> dict[str, Any]:
    """Which API process answered (several may share the port: ROVING_API_WORKERS) and what it runs."""
    runner = svc.runner
    return {"pid": os.getpid(), "leads_scheduler": bool(runner is not None and runner.leading),
            "holds_audit": svc.audit is not None}


routes = [
    Route("/healthz", healthz, methods=["GET"]),
    Route("/readyz", readyz, methods=["GET"]),
    Route("/v4/version", version, methods=["GET"]),
]

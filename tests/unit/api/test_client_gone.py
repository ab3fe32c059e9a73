"""A client that goes away while its request body is read (an agent killed mid-upload) is logged as gone (499), not
as a server failure with a traceback and a 500."""

from __future__ import annotations

import asyncio

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from structlog.testing import capture_logs

from api.http.security import SecurityMiddleware


async def echo(request: Request) -> Response:
    return Response(await request.body())


def serve(receive_messages: list[dict]) -> tuple[list[dict], list[dict]]:
    """One POST through an app with the middleware (inside starlette's own, as api.http.app builds it) and a route
    that reads the body; what was sent back, and what was logged."""
    app = Starlette(routes=[Route("/upload", echo, methods=["POST"])], middleware=[Middleware(SecurityMiddleware)])
    sent: list[dict] = []
    pending = list(receive_messages)
    scope = {"type": "http", "method": "POST", "path": "/upload", "headers": [], "query_string": b"",
             "scheme": "http", "server": ("test", 80), "root_path": ""}

    async def receive() -> dict:
        return pending.pop(0)

    async def send(message: dict) -> None:
        sent.append(message)

    with capture_logs() as logs:
        asyncio.run(app(scope, receive, send))
    return sent, logs


def test_a_client_gone_mid_body_is_logged_as_gone_and_nothing_fails():
    sent, logs = serve([{"type": "http.request", "body": b"part", "more_body": True}, {"type": "http.disconnect"}])
    assert sent == []  # nobody to answer
    assert [entry["event"] for entry in logs] == ["request"]
    assert logs[0]["status"] == 499


def test_a_whole_body_is_still_answered():
    sent, logs = serve([{"type": "http.request", "body": b"whole", "more_body": False}])
    assert sent[0]["status"] == 200 and sent[1]["body"] == b"whole"
    assert logs[0]["status"] == 200

"""The request body cap: a body over `ROVING_MAX_BODY_BYTES` is answered 413 naming the limit, never read whole.

Routes read bodies whole (`await request.body()`), so without a cap one client can hold any amount of the
API's memory. A declared Content-Length over the cap is refused before a byte is read; a body without one
(chunked) is counted as it arrives and refused the moment it passes the cap. The endpoint proxy (`/endpoints/`)
streams bodies to the service without holding them, so the service sets its own limit there; so does the object
store (`/v4/objects/`), which streams a put into JetStream and caps it at ROVING_OBJECT_MAX_BYTES.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.http.errors import problem

DEFAULT_MAX_BODY_BYTES = 4 * 2**20
STREAMED = ("/endpoints/", "/v4/objects/")  # the object store caps its puts itself (ROVING_OBJECT_MAX_BYTES)


class BodyTooLarge(Exception):
    """Raised from `receive` inside a route: the exception handler answers 413."""

    def __init__(self, limit: int) -> None:
        super().__init__(too_large_text(limit))
        self.limit = limit


def too_large_text(limit: int) -> str:
    return f"the request body is over the limit of {limit:,} bytes (ROVING_MAX_BODY_BYTES)"


def too_large(limit: int) -> Response:
    return problem(413, too_large_text(limit), "body", limit=limit)


async def on_too_large(request: Request, error: BodyTooLarge) -> Response:
    return too_large(error.limit)


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, limit: int = DEFAULT_MAX_BODY_BYTES) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith(STREAMED):
            return await self.app(scope, receive, send)
        declared = _content_length(scope)
        if declared is not None and declared > self.limit:
            return await too_large(self.limit)(scope, receive, send)
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise BodyTooLarge(self.limit)
            return message

        await self.app(scope, counted, send)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:  # the server refuses a malformed length itself; nothing to measure here
                return None
    return None

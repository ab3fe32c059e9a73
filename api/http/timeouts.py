"""Read timeouts at the edge: a request's headers must arrive within `ROVING_HEADER_TIMEOUT`, and no wait for the
next piece of its body may last longer than `ROVING_BODY_TIMEOUT`; a client that is slower is cut off with 408.

uvicorn has neither. Its `timeout_keep_alive` closes a connection idle *between* requests, and stops counting at the
first byte of the next one; `h11_max_incomplete_event_size` bounds the size of headers (h11 only), not their pace.
So a client that opens a connection and sends a header byte every few seconds holds it forever. The header timer
is a small subclass of uvicorn's httptools protocol (`HeaderTimedProtocol`): armed when a connection opens and at
the first byte of each request, disarmed when the headers are complete (a WebSocket upgrade included). The body
timer is ASGI middleware around `receive`: it counts only while the app waits for the client, so a body the app
reads slowly on purpose (the endpoint proxy streaming to a slow service, with reading paused) is never cut off.
"""

from __future__ import annotations

import asyncio
from typing import Any

import structlog
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from api.http.errors import problem

log = structlog.get_logger("roving.api")
TIMED_OUT = b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain\r\ncontent-length: %d\r\nconnection: close\r\n\r\n"


class HeaderTimedProtocol(HttpToolsProtocol):
    """uvicorn's HTTP/1.1 protocol, closing a connection whose request headers take longer than `header_timeout`."""

    header_timeout = 10.0
    header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]  # as uvicorn's own is
        super().connection_made(transport)
        self._arm()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self.header_timer = self.loop.call_later(self.header_timeout, self._headers_too_slow)

    def _disarm(self) -> None:
        if self.header_timer is not None:
            self.header_timer.cancel()
            self.header_timer = None

    def _headers_too_slow(self) -> None:
        self.header_timer = None
        if self.transport.is_closing():
            return
        log.info("header_timeout", client=self.client and f"{self.client[0]}:{self.client[1]}",
                 seconds=self.header_timeout)
        if self.cycle is None or self.cycle.response_complete:  # never in the middle of an answer being sent
            text = f"the request headers took longer than {self.header_timeout:g} s (ROVING_HEADER_TIMEOUT)".encode()
            self.transport.write(TIMED_OUT % len(text) + text)
        self.transport.close()


def header_timed(seconds: float) -> type[HeaderTimedProtocol]:
    """The protocol class uvicorn is given (`http=`): it builds one per connection and passes no settings of ours."""
    return type("HeaderTimedProtocol", (HeaderTimedProtocol,), {"header_timeout": seconds})


class BodyTimeout(Exception):
    """Raised from `receive` inside a route: the handler answers 408 and closes the connection."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the request body stalled for more than {seconds:g} s (ROVING_BODY_TIMEOUT)")
        self.seconds = seconds


async def on_body_timeout(request: Request, error: BodyTimeout) -> Response:
    answer = problem(408, str(error), "body")
    answer.headers["connection"] = "close"  # the rest of the body is never read: the connection cannot be reused
    return answer


class BodyTimeoutMiddleware:
    def __init__(self, app: ASGIApp, seconds: float = 30.0) -> None:
        self.app, self.seconds = app, seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        state: dict[str, Any] = {"more": True}

        async def timed() -> Message:
            if not state["more"]:  # the body is in: what follows is the wait for a disconnect, which may be long
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), self.seconds)
            except TimeoutError:
                raise BodyTimeout(self.seconds) from None
            state["more"] = message["type"] == "http.request" and message.get("more_body", False)
            return message

        await self.app(scope, timed, send)

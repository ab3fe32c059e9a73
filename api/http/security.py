"""Response headers every answer carries, and the access log (principal, method, path, status, duration)."""

from __future__ import annotations

import time
from typing import Any

import structlog
from starlette.datastructures import MutableHeaders
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.http.errors import problem

QUIET_PREFIXES = ("/v4/agent/", "/healthz", "/readyz", "/metrics")
CLIENT_GONE = 499  # as nginx logs it: the client closed the connection before its request was read; nothing is sent
log = structlog.get_logger("roving.api")
CSP = "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"
HSTS = "max-age=63072000; includeSubDomains"


def secure_headers(headers: MutableHeaders, https: bool) -> None:
    """nosniff always; a CSP on HTML; HSTS only when the request came over https."""
    headers.setdefault("X-Content-Type-Options", "nosniff")
    headers.setdefault("Referrer-Policy", "no-referrer")
    if headers.get("content-type", "").startswith("text/html"):
        headers.setdefault("Content-Security-Policy", CSP)
    if https:
        headers.setdefault("Strict-Transport-Security", HSTS)


def who(scope: Scope) -> str:
    """The principal's username for the log line; never the token."""
    principal: Any = scope.get("state", {}).get("principal")
    return principal.username if principal is not None else "-"


class SecurityMiddleware:
    """Adds the security headers, logs each request once, and turns an escaped bug into a plain 500."""

    def __init__(self, app: ASGIApp, observe: Any = None) -> None:
        self.app, self.observe = app, observe

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started, status = time.perf_counter(), {"code": 500, "sent": False}
        https = scope.get("scheme") == "https"

        async def send_secure(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"], status["sent"] = message["status"], True
                secure_headers(MutableHeaders(scope=message), https)
            await send(message)

        try:
            await self.app(scope, receive, send_secure)
        except ClientDisconnect:  # e.g. an agent killed mid-upload: nobody to answer, nothing went wrong here
            status["code"] = CLIENT_GONE
        except Exception:
            log.exception("request_failed", method=scope["method"], path=scope["path"], principal=who(scope))
            if not status["sent"]:
                await problem(500, "internal error; the server log has the details")(scope, receive, send_secure)
        finally:
            self._record(scope, status["code"], time.perf_counter() - started)

    def _record(self, scope: Scope, code: int, seconds: float) -> None:
        # agents poll several times a second: their successful calls are debug, everything else is info
        quiet = code < 400 and (scope["path"].startswith(QUIET_PREFIXES))
        (log.debug if quiet else log.info)("request", principal=who(scope), method=scope["method"],
                                           path=scope["path"], status=code, duration_ms=round(seconds * 1000, 2))
        if self.observe is not None:
            self.observe(scope, code, seconds)

"""`create_app(settings, services)`: the Starlette app; the composition root (`api.composition.stack`) owns the services."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.middleware import Middleware

from api.composition.services import Services
from api.composition.settings import Settings
from api.http.auth import AuthMiddleware
from api.http.errors import HANDLERS, Handler
from api.http.limits import DEFAULT_MAX_BODY_BYTES, BodyLimitMiddleware, BodyTooLarge, on_too_large
from api.http.log_bound import LogWriteBound
from api.http.logins import LoginGate, TooManyLogins, on_too_many_logins
from api.http.positions import PositionMiddleware
from api.http.routes import all_routes
from api.http.routes.metrics import observe
from api.http.security import SecurityMiddleware
from api.http.timeouts import BodyTimeout, BodyTimeoutMiddleware, on_body_timeout
from api.http.ui import UiGate


@contextlib.asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    """The services are the composition root's; the app owns only the proxy's connection pool."""
    yield
    client = getattr(app.state, "proxy_client", None)
    if client is not None:
        await client.aclose()


def create_app(settings: Settings, services: Services) -> Starlette:
    """The HTTP API over `services` (roving, views, tailer, key, logs, optional leases)."""
    limit = getattr(settings, "max_body_bytes", DEFAULT_MAX_BODY_BYTES)
    middleware = [
        Middleware(SecurityMiddleware, observe=observe),
        Middleware(BodyLimitMiddleware, limit=limit),  # before auth: an oversized body costs no token check
        Middleware(BodyTimeoutMiddleware, seconds=getattr(settings, "body_timeout_seconds", 30.0)),
        Middleware(LogWriteBound, seconds=getattr(settings, "log_write_timeout_seconds", 10.0),
                   failure=lambda: probe.failure() if (probe := getattr(services, "log_probe", None)) else ""),
        # before auth, which reads users and revoked tokens from the views: they must have reached the position
        Middleware(PositionMiddleware, workers=getattr(settings, "api_workers", 1)),
        Middleware(UiGate),  # /ui/ pages check their own session cookie; every other path goes on to bearer auth
        Middleware(AuthMiddleware, key=services.key, views=services.views),
    ]
    handlers: dict[type[Exception], Handler] = {**HANDLERS, BodyTooLarge: on_too_large, BodyTimeout: on_body_timeout,
                                                TooManyLogins: on_too_many_logins}
    app = Starlette(routes=all_routes(), middleware=middleware, exception_handlers=handlers, lifespan=lifespan)
    app.state.settings = settings
    app.state.services = services
    app.state.logins = LoginGate()  # password checks: their own pool and limits (api/http/logins.py)
    return app

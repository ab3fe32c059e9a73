"""`create_app(settings, services)`: the Starlette app; the composition root (`api.stack`) owns the services."""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware

from api.auth import AuthMiddleware
from api.errors import HANDLERS
from api.routes import all_routes
from api.routes.metrics import observe
from api.security import SecurityMiddleware


def create_app(settings: Any, services: Any) -> Starlette:
    """The HTTP API over `services` (roving, views, tailer, key, logs, optional leases)."""
    middleware = [
        Middleware(SecurityMiddleware, observe=observe),
        Middleware(AuthMiddleware, key=services.key, views=services.views),
    ]
    app = Starlette(routes=all_routes(), middleware=middleware, exception_handlers=dict(HANDLERS))
    app.state.settings = settings
    app.state.services = services
    return app

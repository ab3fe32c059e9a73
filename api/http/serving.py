"""How the API is served: uvicorn with TLS when configured, header read timeouts, and WebSockets for the proxy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import uvicorn

from api.http.timeouts import header_timed

GRACEFUL_SECONDS = 5  # requests in flight (long polls, a command waiting on the log) get this long at stop


def uvicorn_config(app: Any, settings: Any, **overrides: Any) -> uvicorn.Config:
    """The server for `app` on `settings.listen` (https with ROVING_TLS_CERT/KEY); `overrides` go to uvicorn."""
    options: dict[str, Any] = {
        "host": settings.host, "port": settings.port, "log_level": "warning", "log_config": None, "lifespan": "on",
        "timeout_graceful_shutdown": GRACEFUL_SECONDS,
        "http": header_timed(settings.header_timeout_seconds),
        "ws": "websockets-sansio",  # the endpoint proxy's WebSocket bridge (the `websockets` package)
        "forwarded_allow_ips": settings.trusted_proxies,
        "ssl_certfile": str(settings.tls_cert) if settings.tls_cert else None,
        "ssl_keyfile": str(settings.tls_key) if settings.tls_key else None,
    }
    return uvicorn.Config(app, **{**options, **overrides})


class Server(uvicorn.Server):
    """uvicorn's server, telling `before_shutdown` as soon as it begins to stop: held long polls answer then, so
    a stop is not held for the graceful timeout (and they are not cancelled into 500s)."""

    def __init__(self, config: uvicorn.Config, before_shutdown: Callable[[], None] | None = None) -> None:
        super().__init__(config)
        self.before_shutdown = before_shutdown

    async def shutdown(self, sockets: list | None = None) -> None:
        if self.before_shutdown is not None:
            self.before_shutdown()
        await super().shutdown(sockets=sockets)

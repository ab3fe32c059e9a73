"""The connection's state as nats-py's callbacks tell it: since when it has been down, and what to restart when
it comes back."""

from __future__ import annotations

import time

import structlog
from nats.aio.client import Client

log = structlog.get_logger("roving.nats")


async def log_error(error: Exception) -> None:
    log.warning("nats.error", error=repr(error))


class Link:
    """Since when the connection has been down (None while up), told by nats-py's callbacks."""

    def __init__(self) -> None:
        self.down_since: float | None = None
        self.nc: Client | None = None

    async def disconnected(self) -> None:
        if self.down_since is None:
            self.down_since = time.monotonic()
        log.info("nats.disconnected")

    async def reconnected(self) -> None:
        self.down_since = None
        log.info("nats.reconnected")
        await self._reset_ordered_consumers()

    async def _reset_ordered_consumers(self) -> None:
        """A restarted server has lost our ephemeral consumers. nats-py notices only after two missed idle
        heartbeats (10 s, the views stalled meanwhile); like nats.go, start each again now, after the last
        message it delivered. Private attributes: a nats-py without them falls back to its own timer."""
        for sub in list(getattr(self.nc, "_subs", {}).values()):
            jsi = getattr(sub, "_jsi", None)
            if jsi is None or not getattr(jsi, "_ordered", False):
                continue
            start = jsi._sseq + 1 if jsi._sseq else (jsi._ccreq.opt_start_seq or 1)
            try:
                await jsi.reset_ordered_consumer(start)
            except Exception as error:  # noqa: BLE001 - its heartbeat timer will reset it later
                log.warning("nats.consumer_reset_failed", error=repr(error))


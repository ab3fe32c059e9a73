"""A shared JetStream connection owned by one loop thread, with retries across server restarts; while the
connection is down, calls fail fast (LogUnavailable) once it has been down for `down_grace` seconds."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from eventsourcing.persistence import OperationalError

from adapters.jetstream.client import DOWN_GRACE, JetStreamClient
from adapters.jetstream.loop import LoopThread
from adapters.jetstream.refusals import TRANSIENT
from adapters.jetstream.subjects import StreamNames

T = TypeVar("T")


class Connection:
    """What every recorder of one factory shares: the loop thread, the client and the stream names."""

    def __init__(
        self, url: str, cluster: str, replicas: int = 1, op_timeout: float = 5.0, retry_for: float = 60.0,
        down_grace: float = DOWN_GRACE,
    ) -> None:
        self.names = StreamNames(cluster)
        self.replicas = replicas
        self.op_timeout = op_timeout
        self.retry_for = retry_for
        self.loop = LoopThread()
        self._ready: set[str] = set()
        self._closed = False
        try:
            connecting = JetStreamClient.connect(url, down_grace=down_grace)
            self.client: JetStreamClient = self.loop.run(connecting, timeout=15)
        except Exception as error:
            self.loop.stop()
            raise OperationalError(f"cannot connect to NATS at {url}: {error}") from error

    def run(self, make: Callable[[], Awaitable[T]]) -> T:
        """Run an operation on the loop, retrying transient failures (a restarting server)."""
        return self.loop.run(self.retrying(make))

    async def retrying(self, make: Callable[[], Awaitable[T]]) -> T:
        deadline = time.monotonic() + self.retry_for
        delay = 0.05
        while True:
            try:
                return await make()
            except TRANSIENT as error:
                if time.monotonic() > deadline:
                    raise OperationalError(f"JetStream unavailable for {self.retry_for:.0f}s: {error!r}") from error
                await self.client.available()  # a connection known to be down is not waited on for long
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)

    @property
    def reachable(self) -> bool:
        """The connection to the log is up now (nats-py reconnects by itself when it is not)."""
        return not self._closed and self.client.connected

    def ensure(self, purpose: str) -> str:
        """Create the purpose's stream on first use; returns its name."""
        stream = self.names.stream(purpose)
        if stream not in self._ready:
            subjects = [self.names.prefix(purpose) + ".>"]
            extra = {"max_msgs_per_subject": 16} if purpose == "tracking" else {}
            self.run(lambda: self.client.ensure_stream(stream, subjects, self.replicas, **extra))
            self._ready.add(stream)
        return stream

    def close(self) -> None:
        """Idempotent: Applications and tests may both close the factory."""
        if self._closed:
            return
        self._closed = True
        try:
            self.loop.run(self.client.close(), timeout=5)
        except (Exception, asyncio.CancelledError):  # noqa: BLE001 - closing a dead connection is not an error
            pass  # (nats-py's close, meeting its own reconnect on a server just gone, can end cancelled)
        self.loop.stop()

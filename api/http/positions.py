"""Read-your-writes across API workers: every answer carries the log position it reflects, and a request may
name the position it must see.

`Roving-Position: N` on a request holds it (up to SETTLE_SECONDS) until this process's views have applied log
position N; every answer carries `Roving-Position` (what this process has written or applied, whichever is
further), which a client sends back on its next request (the CLI does). With several API workers
(ROVING_API_WORKERS > 1), a request without the header waits for the log's end as it stood when the request
arrived (one stream-info round trip, shared by the requests arriving meanwhile: `LogEnd`), so even a client that
passes nothing along reads what anyone wrote before it asked; the agents' own routes, health and metrics skip that
(their pollers tolerate a view some milliseconds old, and a long poll wakes when the batch lands).
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import structlog
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.http.errors import problem

log = structlog.get_logger("roving.positions")
HEADER = "roving-position"
SETTLE_SECONDS = 5.0
UNSYNCED = ("/v4/agent/", "/healthz", "/readyz", "/metrics", "/ui/static/")


class PositionWaiters:
    """Coroutines waiting for the views to reach a log position; woken from the tailer's thread (a LogSignals
    listener) through their own event loop."""

    def __init__(self, views: Any) -> None:
        self.views = views
        self._lock = threading.Lock()
        self._waiting: list[tuple[int, asyncio.Future, asyncio.AbstractEventLoop]] = []

    async def wait(self, position: int, timeout: float = SETTLE_SECONDS) -> bool:
        """True once the views applied `position`; False after `timeout`."""
        if self.views.position >= position:
            return True
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        entry = (position, future, loop)
        with self._lock:
            self._waiting.append(entry)
        if self.views.position >= position:  # applied between the first look and the registration
            future.set_result(True)
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            return self.views.position >= position
        finally:
            with self._lock:
                if entry in self._waiting:
                    self._waiting.remove(entry)

    def observe(self, batch: list[tuple[int, Any]]) -> None:
        """On the tailer's thread, after the views applied `batch`: release whoever waited for it."""
        reached = self.views.position
        with self._lock:
            due = [entry for entry in self._waiting if entry[0] <= reached]
            self._waiting = [entry for entry in self._waiting if entry[0] > reached]
        by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Future]] = {}
        for _, future, loop in due:
            by_loop.setdefault(loop, []).append(future)
        for loop, futures in by_loop.items():  # one wake-up of each loop for all its waiters, not one each
            if not loop.is_closed():
                loop.call_soon_threadsafe(_settle, futures)


def _settle(futures: list[asyncio.Future]) -> None:
    for future in futures:
        if not future.done():
            future.set_result(True)


class PositionMiddleware:
    """Waits for the position a request names (or, with several workers, the log's end) and stamps answers."""

    def __init__(self, app: ASGIApp, workers: int = 1) -> None:
        self.app, self.workers = app, workers
        self.log_end = LogEnd()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        services = scope["app"].state.services
        try:
            wanted = requested(scope)
        except ValueError as error:
            await problem(400, str(error), "Roving-Position")(scope, receive, send)
            return
        if wanted is None and self.workers > 1 and not scope["path"].startswith(UNSYNCED):
            wanted = await self.log_end.now(services)
        if wanted:
            await reach(services, wanted)

        async def stamped(message: Message) -> None:
            if message["type"] == "http.response.start":
                position = max(getattr(services.roving, "last_position", 0), services.views.position)
                message.setdefault("headers", []).append((b"roving-position", str(position).encode()))
            await send(message)

        await self.app(scope, receive, stamped)


def requested(scope: Scope) -> int | None:
    """The position a request names in its Roving-Position header; ValueError naming what is wrong."""
    for name, value in scope["headers"]:
        if name == HEADER.encode():
            raw = value.decode("latin-1").strip()
            if not raw.isdigit() or len(raw) > 19:
                raise ValueError(f"Roving-Position must be a log position (a whole number), got {raw[:40]!r}")
            return int(raw)
    return None


class LogEnd:
    """The log's last position, asked once for every request waiting when the question is sent (as group commit
    does for writes): a request joins only a question sent after it arrived, so its answer is at least the log's
    end at its arrival; under load, one stream-info round trip serves all the requests of its time."""

    def __init__(self) -> None:
        self._next: asyncio.Future | None = None  # what requests arriving now will be answered with
        self._asking = False

    async def now(self, services: Any) -> int | None:
        """None when the log cannot say (the request then answers from the views)."""
        recorder = getattr(services.roving, "recorder", None)
        if recorder is None:
            return None
        if self._next is None:
            self._next = asyncio.get_running_loop().create_future()
        answer = self._next
        if not self._asking:
            self._asking = True
            asyncio.ensure_future(self._ask(recorder))
        return await asyncio.shield(answer)

    async def _ask(self, recorder: Any) -> None:
        try:
            while self._next is not None:
                answer, self._next = self._next, None  # later arrivals wait for the next question
                try:
                    answer.set_result(await run_in_threadpool(recorder.max_notification_id))
                except Exception as error:  # noqa: BLE001 - an unreachable log is answered by the routes themselves
                    log.warning("positions.log_end_unknown", error=str(error))
                    answer.set_result(None)
        finally:
            self._asking = False


async def reach(services: Any, position: int) -> None:
    """Until this process's views applied `position` (or SETTLE_SECONDS pass: the answer is then what they hold)."""
    waiters = getattr(services, "positions", None)
    if waiters is not None:
        await waiters.wait(position)
        return
    follower = services.tailer if getattr(services.tailer, "wait_for", None) else services.views
    if not asyncio.iscoroutinefunction(follower.wait_for):
        await run_in_threadpool(follower.wait_for, position, timeout=SETTLE_SECONDS)
    else:
        await follower.wait_for(position, timeout=SETTLE_SECONDS)

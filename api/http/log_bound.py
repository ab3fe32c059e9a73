"""Writes never hang on the log: a write request (POST, PUT, PATCH, DELETE) that has not begun its answer after
`ROVING_LOG_WRITE_TIMEOUT` seconds (10 by default) while the log takes no writes (adapters/log_probe.py: no quorum,
a frozen or unreachable server, a full disk) is answered 503 with `Retry-After` and the cause.

Only the log is a reason: a write slow for another reason (a large object streaming in) is not cut off. The work
under way is not cancelled (a command runs in a thread; stopping it half-way would help nothing): it finishes or
fails on its own, and what it sends after the 503 is dropped. It may still land; a caller retrying with the same
`Idempotency-Key` then gets the same workflow (api/http/routes/workflows.py), which the CLI does (api/cli/client.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.http.errors import RETRY_AFTER_SECONDS, problem

log = structlog.get_logger("roving.api")
READS = frozenset({"GET", "HEAD", "OPTIONS"})
RECHECK = 0.5  # past the bound, how often the log's state is looked at again


class LogWriteBound:
    """ASGI middleware; `failure()` says why the log takes no writes now, or ""."""

    def __init__(self, app: ASGIApp, seconds: float, failure: Callable[[], str]) -> None:
        self.app, self.seconds, self.failure = app, seconds, failure
        self.unfinished: set[asyncio.Task] = set()  # writes answered 503 that still run: held until they end

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in READS:
            return await self.app(scope, receive, send)
        state = {"began": False, "answered": False}

        async def sending(message: Message) -> None:
            if state["answered"]:
                return
            state["began"] = True
            await send(message)

        task = asyncio.ensure_future(self.app(scope, receive, sending))
        done, _ = await asyncio.wait({task}, timeout=self.seconds)
        while not done and not state["began"] and not (cause := self.failure()):
            done, _ = await asyncio.wait({task}, timeout=RECHECK)
        if done or state["began"]:
            return await task
        state["answered"] = True
        self.unfinished.add(task)
        task.add_done_callback(self._ended)
        log.warning("request.log_bound", method=scope["method"], path=scope["path"], seconds=self.seconds, cause=cause)
        answer = problem(503, f"the log takes no writes now: {cause}; nothing is lost by trying again (with the same "
                              f"Idempotency-Key)", "log", code="log_unavailable")
        answer.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
        await answer(scope, receive, send)

    def _ended(self, task: asyncio.Task) -> None:
        self.unfinished.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.info("request.after_log_bound_failed", error=repr(task.exception()))

"""Awaiting work that belongs to another thread's event loop, and iterating across two loops, one item at a time.

The HTTP server runs on uvicorn's loop while the control plane's NATS connection lives on its own loop thread
(adapters.jetstream.loop). A streamed object crosses between them chunk by chunk: each item is asked for only when
the consumer wants the next one, so a slow reader slows the writer instead of piling chunks up in memory.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Coroutine
from contextlib import suppress
from typing import Any, TypeVar

T = TypeVar("T")


async def on_loop(loop: asyncio.AbstractEventLoop | None, coro: Coroutine[Any, Any, T]) -> T:
    """`coro` run on `loop` (None, or the running loop: here), awaited from the running loop. Cancelling the
    awaiting task cancels it there too."""
    if loop is None or loop is asyncio.get_running_loop():
        return await coro
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))


async def pulled(loop: asyncio.AbstractEventLoop | None, source: AsyncIterator[T]) -> AsyncGenerator[T, None]:
    """The items of `source`, an async iterator that must run on `loop`, for a consumer on another loop; when the
    consumer stops early, `source` is closed on its own loop."""
    try:
        while True:
            try:
                item = await on_loop(loop, _next(source))
            except StopAsyncIteration:
                return
            yield item
    finally:
        closing = getattr(source, "aclose", None)
        if closing is not None:
            with suppress(Exception):
                await on_loop(loop, closing())


async def _next(source: AsyncIterator[T]) -> T:
    return await source.__anext__()

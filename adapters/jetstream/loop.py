"""One asyncio loop on its own thread, so synchronous eventsourcing code can await nats-py."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from eventsourcing.persistence import OperationalError

T = TypeVar("T")


class LoopThread:
    """Runs coroutines on a private event loop; `run` blocks the calling thread until done.

    Stopping fails every call still waiting, so no caller blocks forever on a loop that will not run again.
    """

    def __init__(self, name: str = "roving-jetstream") -> None:
        self.loop = asyncio.new_event_loop()
        self._pending: set[concurrent.futures.Future[Any]] = set()
        self._lock = threading.Lock()
        self._stopped = False
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("LoopThread.run called from its own loop: await the coroutine instead")
        with self._lock:
            if self._stopped or self.loop.is_closed():
                coro.close()
                raise OperationalError("the JetStream connection is closed")
            future = asyncio.run_coroutine_threadsafe(coro, self.loop)
            self._pending.add(future)
        try:
            return future.result(timeout)
        except concurrent.futures.CancelledError:
            if self._stopped:  # stop() cancelled it
                raise OperationalError("the JetStream connection was closed during the call") from None
            raise
        finally:
            with self._lock:
                self._pending.discard(future)

    def stop(self) -> None:
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        if not self.loop.is_closed():
            try:  # a task left pending on a closed loop is reported later, wherever the collector runs
                asyncio.run_coroutine_threadsafe(_cancel_others(), self.loop).result(2)
            except (concurrent.futures.TimeoutError, RuntimeError):
                pass
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=5)
            if not self._thread.is_alive():
                self.loop.close()
        with self._lock:
            waiting = [f for f in self._pending if not f.done()]
        for future in waiting:
            future.set_exception(OperationalError("the JetStream connection was closed during the call"))


async def _cancel_others() -> None:
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)

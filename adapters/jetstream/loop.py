"""One asyncio loop on its own thread, so synchronous eventsourcing code can await nats-py.

The hop is the cost of every synchronous save, so it is kept light: a plain lock the caller sleeps on, released by
the loop thread the moment the answer is known (no `concurrent.futures.Future`, and for `call` no task either), and
one wake-up of the loop for all the calls that arrive before it drains them (`call_soon_threadsafe` writes a byte
to the loop's self-pipe, which the loop then reads: two system calls, once a drain rather than once a call).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from eventsourcing.persistence import OperationalError

T = TypeVar("T")
Done = Callable[[Any, BaseException | None], None]


class _Call:
    """One caller waiting: the lock is held until the loop thread has put the outcome here."""

    __slots__ = ("lock", "result", "error", "finished")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.lock.acquire()
        self.result: Any = None
        self.error: BaseException | None = None
        self.finished = False

    def finish(self, result: Any, error: BaseException | None = None) -> None:
        if self.finished:  # a stop() already failed it
            return
        self.finished = True
        self.result, self.error = result, error
        self.lock.release()


class LoopThread:
    """Runs work on a private event loop; `run` and `call` block the calling thread until done.

    Stopping fails every call still waiting, so no caller blocks forever on a loop that will not run again.
    """

    def __init__(self, name: str = "roving-jetstream") -> None:
        self.loop = asyncio.new_event_loop()
        self._pending: set[_Call] = set()
        self._arrived: deque[tuple[Callable[[Done], None], _Call]] = deque()
        self._waking = False  # a drain is scheduled on the loop and has not yet taken what arrived
        self._lock = threading.Lock()
        self._stopped = False
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Await `coro` on the loop. A timeout leaves it running there (as `run_coroutine_threadsafe` did)."""
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("LoopThread.run called from its own loop: await the coroutine instead")
        started = False

        def start(done: Done) -> None:
            nonlocal started
            started = True
            self.loop.create_task(coro).add_done_callback(lambda task: outcome(task, done))

        try:
            return self.call(start, timeout)
        finally:
            if not started:  # refused, or the loop stopped before it began: never leave it unawaited
                coro.close()

    def call(self, start: Callable[[Done], None], timeout: float | None = None) -> Any:
        """Run `start(done)` on the loop; it (or what it starts there) calls `done(result, error)` once, on
        the loop thread. Returns the result or raises the error."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("LoopThread.call from its own loop: await the coroutine instead")
        call = _Call()
        with self._lock:
            if self._stopped or self.loop.is_closed():
                raise OperationalError("the JetStream connection is closed")
            self._pending.add(call)
            self._arrived.append((start, call))
            wake, self._waking = not self._waking, True
        try:
            if wake:
                self._wake()
            if not call.lock.acquire(timeout=-1 if timeout is None else timeout):
                raise concurrent.futures.TimeoutError(f"no answer from the loop within {timeout}s")
        finally:
            with self._lock:
                self._pending.discard(call)
        if call.error is not None:
            if isinstance(call.error, asyncio.CancelledError) and self._stopped:
                raise OperationalError("the JetStream connection was closed during the call") from None
            raise call.error
        return call.result

    def _wake(self) -> None:
        try:
            self.loop.call_soon_threadsafe(self._drain)
        except RuntimeError:  # closed since the check: stop() fails every call still pending
            with self._lock:
                self._waking = False
            raise OperationalError("the JetStream connection is closed") from None

    def _drain(self) -> None:
        """On the loop: begin every call that has arrived, in the order they arrived."""
        with self._lock:
            self._waking = False
            arrived, self._arrived = self._arrived, deque()
        for start, call in arrived:
            if not call.finished:  # stop() failed it while it waited here
                _begin(start, call)

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
            waiting = list(self._pending)
        for call in waiting:
            call.finish(None, OperationalError("the JetStream connection was closed during the call"))


def _begin(start: Callable[[Done], None], call: _Call) -> None:
    try:
        start(call.finish)
    except BaseException as error:  # noqa: BLE001 - the caller gets it, not the loop
        call.finish(None, error)


def outcome(task: asyncio.Task, done: Done) -> None:
    """Pass a finished task's result or error to `done`."""
    if task.cancelled():
        done(None, asyncio.CancelledError())
    elif (error := task.exception()) is not None:
        done(None, error)
    else:
        done(task.result(), None)


async def _cancel_others() -> None:
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)

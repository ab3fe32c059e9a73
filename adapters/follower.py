"""The follower: keeps one read model up to date with one log, in pages until caught up, then live.

It is the one way a view is fed from the log (the views' tailer, the audit feed, the federated view).
The log is anything that answers eventsourcing's `select_notifications(start=, limit=)` (a short page
means the end for now), and, to follow live, `subscribe(gt=)`; a log read from inside an event loop
(the federation hub) answers `aselect_notifications` instead, and is caught up with `acatch_up`.
`decode` turns what the log returns into the (position, event) batch the target's `apply` takes, so the
target never sees bytes. The target records its own position (with its rows, when it has storage): the
follower keeps none, so a failed round is tried again from the target's position, and nothing is skipped
or applied twice.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, Self

import structlog

Decode = Callable[[Sequence[Any]], Iterable[tuple[int, Any]]]


class Target(Protocol):
    @property
    def position(self) -> int: ...  # the last log position applied

    def apply(self, batch: Iterable[tuple[int, Any]]) -> int: ...


class Follower:
    """Feeds `target` from `log` on a daemon thread once started; `poll_seconds` polls instead of subscribing
    (each round then writes whatever arrived since the last as one batch)."""

    def __init__(self, log: Any, target: Target, decode: Decode, *, name: str, page: int = 1000,
                 retry_seconds: float = 1.0, poll_seconds: float | None = None) -> None:
        self.log, self.target, self.decode, self.name = log, target, decode, name
        self.page, self.retry_seconds, self.poll_seconds = page, retry_seconds, poll_seconds
        self.caught_up = threading.Event()
        self._log = structlog.get_logger(f"roving.{name}")
        self._stopped = threading.Event()
        self._applied = threading.Condition()
        self._subscription: Any = None
        self._thread = threading.Thread(target=self._run, name=f"roving-{name.replace('_', '-')}", daemon=True)

    @property
    def position(self) -> int:
        return self.target.position

    def start(self) -> Self:
        self._thread.start()
        return self

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop following and wait for the thread to finish its current batch."""
        self._stopped.set()
        subscription = self._subscription
        if subscription is not None:
            subscription.stop()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def wait_for(self, position: int, timeout: float | None = None) -> bool:
        """Block until the target applied `position` (an API reading its own write); False on timeout."""
        with self._applied:
            return self._applied.wait_for(lambda: self.target.position >= position, timeout)

    def __enter__(self) -> Follower:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- reading ---------------------------------------------------------------------------------------
    def read_page(self) -> int:
        """The next page of the log into the target; returns how many entries were read."""
        return self._take(self.log.select_notifications(start=self.target.position + 1, limit=self.page))

    async def aread_page(self) -> int:
        return self._take(await self.log.aselect_notifications(start=self.target.position + 1, limit=self.page))

    def catch_up(self) -> None:
        while self.read_page() == self.page and not self._stopped.is_set():
            pass

    async def acatch_up(self) -> None:
        while await self.aread_page() == self.page:
            pass

    def _take(self, entries: Sequence[Any]) -> int:
        if entries:
            self.apply(entries)
        return len(entries)

    def apply(self, entries: Sequence[Any]) -> None:
        self.target.apply(self.decode(entries))
        with self._applied:
            self._applied.notify_all()
        self.applied()

    # -- hooks for a follower with more to do around the feeding ----------------------------------------
    def starting(self) -> None:
        """Before the first round (the tailer restores its snapshot here)."""

    def applied(self) -> None:
        """After each batch (the tailer saves a snapshot here when one is due)."""

    # -- the thread ------------------------------------------------------------------------------------
    def _run(self) -> None:
        self.starting()
        with self._applied:
            self._applied.notify_all()  # a restored target may already be where a reader waits
        while not self._stopped.is_set():
            try:
                self.catch_up()
                self._log.info(f"{self.name}.caught_up", position=self.target.position)
                self.caught_up.set()
                self._poll() if self.poll_seconds is not None else self._follow()
            except Exception as error:  # noqa: BLE001 - keep following; the next round resumes at the target's position
                if self._stopped.is_set():  # stopped mid-round: its owner closed what the round wrote to
                    self._log.info(f"{self.name}.stopped_mid_round", error=str(error) or type(error).__name__)
                    return
                self._log.exception(f"{self.name}.failed", position=self.target.position)
                self._stopped.wait(self.retry_seconds)

    def _poll(self) -> None:
        while not self._stopped.is_set():
            if self.read_page() < self.page:
                self._stopped.wait(self.poll_seconds)

    def _follow(self) -> None:
        with self.log.subscribe(gt=self.target.position) as subscription:
            self._subscription = subscription
            if self._stopped.is_set():
                return
            take_ready: Callable[[int], list[Any]] = getattr(subscription, "take_ready", lambda limit: [])
            for entry in subscription:
                self.apply([entry, *take_ready(self.page)])  # one lock and one wake-up per burst
                if self._stopped.is_set():
                    return

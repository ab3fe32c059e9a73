"""Group commit: commits that arrive while a batch is being published go out together, as one atomic batch.

The nats-server stages every atomic batch of a one-replica file stream in a file store of its own, so a
batch costs it about 2 ms of CPU whatever its size (ops/bench/batch_cost.py), and one stream takes only a
few hundred batches a second. So one batch is in flight at a time, and the commits that arrived meanwhile
share its next batch. Each keeps its own message ids, its expectations are read from the heads when its
batch is formed (so a commit that follows another of the same aggregate expects that one's sequence), and
each learns its own sequences from the batch's last one. Commits touching the same aggregate never share a
batch (the server allows one expectation per subject in a batch).

A commit of one message (a placement, a single-aggregate save of one event) does not wait behind the batch
in flight: a plain publish costs the server a tenth of a batch, so it goes out at once, on its own, and
many may be in flight together. It still waits for any earlier commit of its aggregate (queued, in flight
or being retried), and its expectation is read from the heads when it goes, as a batch's are.

A batch is all or nothing. When it is refused, or its ack is lost, each of its commits is retried on its
own, in a task of its own: the retry finds out whether that commit was the cause, or whether the lost ack
hid its landing (a single is retried the same way). Meanwhile the queue goes on with commits of other
aggregates; those of the aggregates being retried wait for the retry, so their order holds and a slow retry
holds up nothing else.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import Counter

from adapters.jetstream.client import MAX_BATCH
from adapters.jetstream.parts import Part, PartCommitter
from adapters.jetstream.refusals import TRANSIENT

BATCHES = Counter("roving_log_batches_total", "Atomic batches the group commit published (first attempts)",
                  ["stream"])
COMMITS = Counter("roving_log_commits_total", "Commits the group commit published (first attempts): those in "
                                              "batches, and those of one message published alone", ["stream"])


@dataclass
class Waiting:
    parts: list[Part]
    future: asyncio.Future | Reply = field(repr=False)
    expected: dict[object, int] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return sum(len(part.events) for part in self.parts)

    @property
    def originators(self) -> set[object]:
        return {part.originator_id for part in self.parts}

    @property
    def single(self) -> bool:
        """One message: it may go as a plain publish, beside the batch in flight."""
        return len(self.parts) == 1 and len(self.parts[0].events) == 1


class Reply:
    """A synchronous caller's end of a commit (see `loop.LoopThread.call`): settling it calls `done` at once,
    in the turn the ack was read, where a Future would wake its waiter one turn later."""

    __slots__ = ("_done", "_settled")

    def __init__(self, done: Callable[[Any, BaseException | None], None]) -> None:
        self._done, self._settled = done, False

    def done(self) -> bool:
        return self._settled

    def set_result(self, result: Any) -> None:
        self._settled = True
        self._done(result, None)

    def set_exception(self, error: BaseException) -> None:
        self._settled = True
        self._done(None, error)


def _settle(future: asyncio.Future | Reply, result: Any = None, error: BaseException | None = None) -> None:
    if future.done():  # its caller gave up (cancelled); the commit's outcome is still what it is
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class CommitQueue:
    """Commits without tracking, published on the connection's loop: one batch at a time, and singles at once.

    No task carries a batch: it is written in the turn after its first commit arrived (so every commit handed
    over in that turn shares it) and settled in the turn its ack is read, which then sends the next."""

    def __init__(self, committer: PartCommitter) -> None:
        self.committer = committer
        self.waiting: deque[Waiting] = deque()
        self.busy: set[object] = set()  # aggregates of commits being retried on their own
        self.flying: set[object] = set()  # aggregates of singles published and not yet answered
        self.retries: set[asyncio.Task] = set()
        self.in_flight = False  # a batch
        self.scheduled: asyncio.Handle | None = None
        self.batches = BATCHES.labels(committer.stream)
        self.commits = COMMITS.labels(committer.stream)

    async def commit(self, parts: list[Part]) -> list[int]:
        future = asyncio.get_running_loop().create_future()
        self.submit(parts, future)
        return await future

    def submit(self, parts: list[Part], reply: asyncio.Future | Reply, at_once: bool = False) -> None:
        """On the loop thread: queue a commit; `reply` is settled with its sequences or its error. `at_once`:
        when it can go now (nothing in flight, or it is a single), send it in this turn instead of the next (a
        caller on another thread hands over one commit a turn, so waiting a turn groups it with nothing and costs
        a turn of the loop)."""
        waiting = Waiting(parts, reply)
        self.waiting.append(waiting)
        if at_once and self.scheduled is None and (not self.in_flight or waiting.single):
            self._send_next()
        else:
            self._kick()

    def _kick(self) -> None:
        if self.waiting and self.scheduled is None:
            self.scheduled = asyncio.get_running_loop().call_soon(self._send_next)

    def _send_next(self) -> None:
        self.scheduled = None
        group, singles = self._next_sends()
        for waiting in singles:
            self._send_single(waiting)
        if group:
            self._send_batch(group)

    def _send_single(self, waiting: Waiting) -> None:
        committer = self.committer
        messages = committer.messages(waiting.parts, waiting.expected, None, None)
        self.commits.inc()
        self.flying |= waiting.originators
        try:
            committer.send(messages, lambda last, error: self._single_answered(waiting, last, error))
        except Exception as error:  # noqa: BLE001 - not even sent: it finds out on its own
            self._single_answered(waiting, None, error)

    def _single_answered(self, waiting: Waiting, last: int | None, error: BaseException | None) -> None:
        self.flying -= waiting.originators
        if error is not None or last is None:
            self._retry(waiting, retried=isinstance(error, TRANSIENT))
        else:
            _settle(waiting.future, self.committer.remember(waiting.parts, last, 1))
        self._kick()  # later commits of its aggregate may go now

    def _send_batch(self, group: list[Waiting]) -> None:
        committer = self.committer
        messages = [m for w in group for m in committer.messages(w.parts, w.expected, None, None)]
        self.batches.inc()
        self.commits.inc(len(group))
        self.in_flight = True
        try:
            committer.send(messages, lambda last, error: self._answered(group, len(messages), last, error))
        except Exception as error:  # noqa: BLE001 - not even sent: each commit finds out on its own
            self._answered(group, len(messages), None, error)

    def _answered(self, group: list[Waiting], count: int, last: int | None, error: BaseException | None) -> None:
        self.in_flight = False
        if error is not None or last is None:  # refused or unacknowledged, whole: each finds out on its own
            for waiting in group:
                self._retry(waiting, retried=isinstance(error, TRANSIENT))
        else:
            position = last - count
            for waiting in group:
                position += waiting.size
                _settle(waiting.future, self.committer.remember(waiting.parts, position, waiting.size))
        self._send_next()  # what arrived meanwhile goes now, as one batch

    def _next_sends(self) -> tuple[list[Waiting], list[Waiting]]:
        """In order, every commit not held back by an earlier one of its aggregates (waiting, in flight or being
        retried): the singles, each to go alone, and (unless a batch is in flight) the rest that fit one batch;
        each with the expectations the heads give now."""
        group: list[Waiting] = []
        singles: list[Waiting] = []
        taken, size = self.busy | self.flying, 0
        later: deque[Waiting] = deque()
        while self.waiting:
            waiting = self.waiting.popleft()
            held = waiting.originators & taken or (not waiting.single and (
                self.in_flight or (group and size + waiting.size > MAX_BATCH)))
            taken |= waiting.originators  # a later commit of the same aggregate keeps its place behind it
            if held:
                later.append(waiting)
                continue
            try:
                waiting.expected = self.committer.expectations(waiting.parts)
            except Exception as error:  # noqa: BLE001 - the heads already know a newer version: a conflict
                _settle(waiting.future, error=error)
                continue
            if waiting.single:
                singles.append(waiting)
            else:
                group.append(waiting)
                size += waiting.size
        self.waiting = later
        return group, singles

    def _retry(self, waiting: Waiting, retried: bool) -> None:
        self.busy |= waiting.originators
        task = asyncio.get_running_loop().create_task(self._alone(waiting, retried))
        self.retries.add(task)  # held until done: the loop keeps only weak references to tasks

    async def _alone(self, waiting: Waiting, retried: bool) -> None:
        try:
            seqs = await self.committer.commit_parts(waiting.parts, waiting.expected, None, retried=retried)
        except asyncio.CancelledError:  # the loop is closing
            _settle(waiting.future, error=asyncio.CancelledError())
            raise
        except Exception as error:  # noqa: BLE001 - the caller gets its own commit's error
            _settle(waiting.future, error=error)
        else:
            _settle(waiting.future, seqs)
        self.busy -= waiting.originators
        self.retries.discard(asyncio.current_task())
        self._kick()  # commits of its aggregates may go now

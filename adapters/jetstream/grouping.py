"""Group commit: commits that arrive while another is being published go out together, as one atomic batch.

The nats-server stages every atomic batch of a one-replica file stream in a file store of its own, so a
batch costs it about 2 ms of CPU whatever its size (ops/bench/batch_cost.py), and one stream takes only a
few hundred batches a second. Under load, commits wait for the batch in flight and then share the next one.
Each keeps its own expectations and message ids, so the batch is exactly the commits' messages one after
another, and each learns its own sequences from the batch's last one. A batch is all or nothing: when it is
refused or its ack is lost, every commit in it is published again on its own, as a retry, which finds out
whether it (or its neighbour) was the cause, and whether the lost ack hid a landing. Commits that touch the
same aggregate never share a batch (the server allows one expectation per subject in a batch).
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from prometheus_client import Counter

from adapters.jetstream.client import MAX_BATCH

BATCHES = Counter("roving_log_batches_total", "Publishes of commits without tracking to the log", ["stream"])
COMMITS = Counter("roving_log_commits_total", "Commits without tracking they carried (more than batches: grouped)",
                  ["stream"])

if TYPE_CHECKING:
    from adapters.jetstream.commit import Committer, Part


@dataclass
class Waiting:
    parts: list[Part]
    expected: dict[object, int]
    future: asyncio.Future = field(repr=False)

    @property
    def size(self) -> int:
        return sum(len(part.events) for part in self.parts)

    @property
    def originators(self) -> set[object]:
        return {part.originator_id for part in self.parts}


def _settle(future: asyncio.Future, result: Any = None, error: BaseException | None = None) -> None:
    if future.done():  # its caller gave up (cancelled); the commit's outcome is still what it is
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class CommitQueue:
    """Commits without tracking, published by one flusher task on the connection's loop."""

    def __init__(self, committer: Committer) -> None:
        self.committer = committer
        self.waiting: deque[Waiting] = deque()
        self.flusher: asyncio.Task | None = None
        self.batches = BATCHES.labels(committer.stream)  # how many publishes, and the commits they held
        self.commits = COMMITS.labels(committer.stream)

    async def commit(self, parts: list[Part], expected: dict[object, int]) -> list[int]:
        loop = asyncio.get_running_loop()
        waiting = Waiting(parts, expected, loop.create_future())
        self.waiting.append(waiting)
        if self.flusher is None or self.flusher.done():
            self.flusher = loop.create_task(self._flush())
        return await waiting.future

    async def _flush(self) -> None:
        while self.waiting:
            group = self._next_group()
            try:
                await self._publish(group)
            except BaseException as error:  # noqa: BLE001 - no caller is ever left waiting
                for waiting in group:
                    _settle(waiting.future, error=error)
                if isinstance(error, asyncio.CancelledError):
                    for waiting in self.waiting:
                        _settle(waiting.future, error=error)
                    raise

    def _next_group(self) -> list[Waiting]:
        """The oldest commit, and after it every waiting one that fits and touches none of the same aggregates."""
        group: list[Waiting] = []
        taken: set[object] = set()
        size, later = 0, deque()
        while self.waiting:
            waiting = self.waiting.popleft()
            if group and (size + waiting.size > MAX_BATCH or waiting.originators & taken):
                later.append(waiting)
                continue
            group.append(waiting)
            taken |= waiting.originators
            size += waiting.size
        self.waiting = later
        return group

    async def _publish(self, group: list[Waiting]) -> None:
        if len(group) == 1:
            await self._alone(group[0], retried=False)
            return
        committer = self.committer
        messages = [m for w in group for m in committer.messages(w.parts, w.expected, None, None)]
        try:
            last = await committer.publish(messages)
        except Exception:  # noqa: BLE001 - refused or unacknowledged, whole: each commit finds out on its own
            await asyncio.gather(*(self._alone(w, retried=True) for w in group))
            return
        self.batches.inc()
        self.commits.inc(len(group))
        position = last - len(messages)
        for waiting in group:
            position += waiting.size
            _settle(waiting.future, committer.remember(waiting.parts, position, waiting.size))

    async def _alone(self, waiting: Waiting, retried: bool) -> None:
        try:
            seqs = await self.committer.commit_parts(waiting.parts, waiting.expected, None, retried=retried)
        except Exception as error:  # noqa: BLE001 - the caller gets its own commit's error
            _settle(waiting.future, error=error)
            return
        self.batches.inc()
        self.commits.inc()
        _settle(waiting.future, seqs)

"""Image pulls told as stage events: the executor's pull lines ("pulling IMAGE: 2 of 5 blobs", "unpacking ...")
sent as `image` reports at most every few seconds while the pull runs (the agent's loop waits for the start, so
they are sent from tasks of their own), then "image IMAGE ready in T s (cached|pulled)" once the job starts.

Best effort, as transfer progress: straight to the API, not through the outbox; a lost line is superseded.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from adapters.pull_progress import Tell
from adapters.runspec import RunSpec
from api.agent.messages import as_json, report_of
from api.agent.progress import EVERY, ProgressRelay

Call = Callable[..., Awaitable[Any]]


class ImagePulls:
    def __init__(self, call: Call, node_id: Callable[[], str | None], loop: asyncio.AbstractEventLoop,
                 every: float = EVERY) -> None:
        self.call, self.node_id, self.loop = call, node_id, loop
        self.relay = ProgressRelay(every)
        self.pending: set[asyncio.Task] = set()

    def tell(self, spec: RunSpec) -> Tell:
        """The executor's Tell for one job's pull: called from its thread."""
        def told(text: str) -> None:
            self.relay.told(spec.allocation_id, spec.epoch, text)
            try:
                self.loop.call_soon_threadsafe(self._flush_soon)
            except RuntimeError:  # the loop already closed: the agent is gone
                pass
        return told

    def _flush_soon(self) -> None:
        task = self.loop.create_task(self.flush())
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)

    async def flush(self) -> None:
        for allocation_id, epoch, text in self.relay.due():
            await self.send(allocation_id, epoch, text)

    async def ready(self, spec: RunSpec, note: str) -> None:
        """The pull is over and the job started: its last word, after any line still on its way."""
        self.relay.forget(spec.allocation_id, spec.epoch)
        if self.pending:
            await asyncio.gather(*self.pending, return_exceptions=True)
        if note:
            await self.send(spec.allocation_id, spec.epoch, note)

    def forget(self, spec: RunSpec) -> None:
        self.relay.forget(spec.allocation_id, spec.epoch)

    async def send(self, allocation_id: str, epoch: int, text: str) -> None:
        body = report_of(self.node_id(), allocation_id, epoch, "image", reason=text)
        await self.call("POST", "/v4/agent/reports", **as_json(body))

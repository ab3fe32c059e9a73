"""A live tail of the log for eventsourcing's `subscribe`: an ordered JetStream consumer."""

from __future__ import annotations

import asyncio
import queue
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING

from eventsourcing.persistence import Notification, Subscription
from nats.aio.msg import Msg
from nats.js.api import ConsumerConfig, DeliverPolicy

from adapters.jetstream.client import RawMsg
from adapters.jetstream.messages import is_event, is_tracking, notification_of

if TYPE_CHECKING:  # the recorder makes its subscriptions: imported for its type only
    from adapters.jetstream.recorders import JetStreamApplicationRecorder


class _Stop:
    """Put on the queue when the subscription stops."""


_STOP = _Stop()


class JetStreamSubscription(Subscription["JetStreamApplicationRecorder"]):
    """Yields notifications after `gt`, then blocks for new ones until stopped.

    What arrives in one turn of the connection's loop is handed to the reading thread at once, as one list: a
    thread-safe put (and the wake-up of a waiting reader) per message was 7% of the control plane's CPU under a
    burst of one-job workflows."""

    def __init__(self, recorder: JetStreamApplicationRecorder, gt: int | None = None,
                 topics: Sequence[str] = ()) -> None:
        super().__init__(recorder=recorder, gt=gt, topics=topics)
        self._topic_set = frozenset(topics)
        self._queue: queue.Queue[list[Notification] | _Stop] = queue.Queue()
        self._arriving: list[Notification] = []  # on the loop: this turn's, handed over at its end
        self._ready: deque[Notification] = deque()  # on the reader's thread: handed over, not yet taken
        self._connection = recorder.connection
        config = ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=(gt or 0) + 1)
        subject = self._connection.names.prefix(recorder.purpose) + ".>"
        self._sub = self._connection.run(lambda: self._connection.client.js.subscribe(
            subject, stream=recorder.stream, cb=self._receive, ordered_consumer=True, config=config))

    async def _receive(self, msg: Msg) -> None:
        headers = msg.headers or {}
        raw = RawMsg(msg.metadata.sequence.stream, msg.subject, headers, msg.data)
        if is_tracking(raw) or not is_event(raw) or (self._topic_set and headers.get("Roving-Topic") not in self._topic_set):
            return
        if not self._arriving:
            asyncio.get_running_loop().call_soon(self._hand_over)
        self._arriving.append(notification_of(raw))

    def _hand_over(self) -> None:
        arrived, self._arriving = self._arriving, []
        self._queue.put(arrived)

    def __next__(self) -> Notification:
        while not self._ready:
            item = self._queue.get() if not self._has_been_stopped else _STOP
            if isinstance(item, _Stop) or self._has_been_stopped:
                raise StopIteration
            self._ready.extend(item)
        if self._has_been_stopped:
            raise StopIteration
        taken = self._ready.popleft()
        self._last_notification_id = taken.id
        return taken

    def take_ready(self, limit: int) -> list[Notification]:
        """What has already arrived, up to `limit`, without blocking: a follower applies it as one batch."""
        while len(self._ready) < limit and not self._has_been_stopped:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if isinstance(item, _Stop):
                self._queue.put(_STOP)
                break
            self._ready.extend(item)
        taken = [self._ready.popleft() for _ in range(min(limit, len(self._ready)))]
        if taken:
            self._last_notification_id = taken[-1].id
        return taken

    def stop(self) -> None:
        if self._has_been_stopped:
            return
        super().stop()
        self._queue.put(_STOP)
        loop = self._connection.loop.loop
        if not loop.is_closed():
            asyncio.run_coroutine_threadsafe(self._unsubscribe(), loop)

    async def _unsubscribe(self) -> None:
        try:
            await self._sub.unsubscribe()
        except Exception:  # noqa: BLE001 - the connection may already be closed at shutdown
            pass

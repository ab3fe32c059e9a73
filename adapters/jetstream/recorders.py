"""eventsourcing recorders on JetStream: aggregate, application, process and tracking."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any
from uuid import UUID

import nats.js.errors
from eventsourcing.persistence import (
    AggregateRecorder,
    ApplicationRecorder,
    IntegrityError,
    Notification,
    ProcessRecorder,
    StoredEvent,
    Subscription,
    Tracking,
    TrackingRecorder,
)

from adapters.jetstream.client import RawMsg
from adapters.jetstream.commit import Committer, Heads
from adapters.jetstream.connection import Connection
from adapters.jetstream.cursor import Cursor
from adapters.jetstream.messages import is_event, is_tracking, notification_of, version_of
from adapters.jetstream.refusals import WrongLastSequence
from adapters.jetstream.subscription import JetStreamSubscription

PAGE = 1000
BY_CURSOR = 100  # a read of fewer notifications is cheaper by direct get than by making a consumer
Page = Callable[[int, int, float], Awaitable[tuple[list[RawMsg], bool]]]


class JetStreamAggregateRecorder(AggregateRecorder):
    """Events of aggregates on `roving.<cluster>.<kind>.<id>`; snapshots on their own stream."""

    def __init__(self, connection: Connection, purpose: str = "events") -> None:
        self.connection = connection
        self.purpose = purpose
        self.stream = connection.ensure(purpose)
        self.heads = Heads()
        # (version, sequence) of the last event read or written per aggregate: unlike the heads, a refused write
        # leaves it, so a copy that lost a race catches up from where it was, not from the subject's start
        self.anchors = Heads()
        self.committer = Committer(
            connection.client, connection.names, purpose, self.heads,
            connection.op_timeout, connection.retry_for, anchors=self.anchors,
        )

    def insert_events(self, stored_events: Sequence[StoredEvent], **kwargs: Any) -> Sequence[int] | None:
        self._insert(stored_events, kwargs.get("tracking"))
        return None

    def _insert(self, stored_events: Sequence[StoredEvent], tracking: Tracking | None) -> list[int]:
        if not stored_events and tracking is None:
            return []
        if tracking is None and self.committer.queue is not None:  # the light hop: no task, no Future
            return self.connection.loop.call(lambda done: self.committer.submit(stored_events, done))
        return self.connection.loop.run(self.committer.commit(stored_events, tracking))

    def insert_apart(self, commits: Sequence[Sequence[StoredEvent]]) -> list[list[int] | BaseException]:
        """Several commits handed to the group commit in one turn, each landing or failing on its own: commits of one
        message each are published at once, in this order (pipelined). Each one's sequences, or its error."""

        async def together() -> list[list[int] | BaseException]:
            return await asyncio.gather(*(self.committer.commit(c, None) for c in commits), return_exceptions=True)

        return self.connection.loop.run(together())

    def select_events(
        self, originator_id: UUID | str, *, gt: int | None = None, lte: int | None = None,
        desc: bool = False, limit: int | None = None,
    ) -> Sequence[StoredEvent]:
        subject = self.connection.names.aggregate_filter(self.purpose, originator_id)
        last = None
        if desc and limit == 1 and lte is None:
            last = self.connection.run(lambda: self.connection.client.direct_last(
                self.stream, subject, self.connection.op_timeout))
        if last is not None and is_event(last):
            msgs = [last] if gt is None or version_of(last) > gt else []
        elif desc and limit == 1 and lte is None and last is None:
            msgs = []
        else:  # a read of the subject (also when a message that is no event is its last)
            start = self._start_after(originator_id, gt)
            msgs = self.connection.run(lambda: self._read(subject, start, None))
            written = [m for m in msgs if is_event(m)]
            if written:  # the fence of the next write is the subject's last message, whatever it is
                self.heads.remember(originator_id, version_of(written[-1]), msgs[-1].seq)
                self.anchors.remember(originator_id, version_of(written[-1]), msgs[-1].seq)
            msgs = written
        events = [
            StoredEvent(originator_id, version_of(m), m.headers["Roving-Topic"], m.data)
            for m in msgs
            if (gt is None or version_of(m) > gt) and (lte is None or version_of(m) <= lte)
        ]
        if desc:
            events.reverse()
        return events[:limit] if limit is not None else events

    def _start_after(self, originator_id: UUID | str, gt: int | None) -> int:
        """Where a read of events after version `gt` may start: past the last event written or read of that
        aggregate when it is not newer than `gt` (a cached aggregate catching up reads only what is new), else the
        beginning."""
        if gt is None:
            return 1
        for known in (self.heads.known(originator_id), self.anchors.known(originator_id)):
            if known is not None and known[0] <= gt:
                return known[1] + 1
        return 1

    async def _read(self, subject: str, start: int, limit: int | None) -> list[RawMsg]:
        found: list[RawMsg] = []
        while limit is None or len(found) < limit:
            page = PAGE if limit is None else min(PAGE, limit - len(found))
            msgs, pending = await self.connection.client.direct_batch(
                self.stream, subject, start, page, self.connection.op_timeout)
            found.extend(msgs)
            if not msgs or pending == 0:
                break
            start = msgs[-1].seq + 1
        return found


class JetStreamApplicationRecorder(JetStreamAggregateRecorder, ApplicationRecorder):
    """The stream sequence is the notification id. Long reads of the log go through a consumer (see
    `cursor`), short ones by direct gets."""

    def __init__(self, connection: Connection, purpose: str = "events") -> None:
        super().__init__(connection, purpose)
        self.cursor = Cursor(connection.client, self.stream, connection.names.prefix(purpose) + ".>")

    def insert_events(self, stored_events: Sequence[StoredEvent], **kwargs: Any) -> Sequence[int] | None:
        return self._insert(stored_events, kwargs.get("tracking"))

    def select_notifications(
        self, start: int | None, limit: int, stop: int | None = None, topics: Sequence[str] = (),
        *, inclusive_of_start: bool = True,
    ) -> Sequence[Notification]:
        first = (start or 1) if inclusive_of_start else (start or 0) + 1
        return self.connection.run(lambda: self._notifications(first, limit, stop, frozenset(topics)))

    async def _notifications(self, first: int, limit: int, stop: int | None, topics: frozenset[str]):
        if limit >= BY_CURSOR and self.cursor.usable and not self.cursor.busy:
            try:
                return await self._notifications_from(self.cursor.page, first, limit, stop, topics)
            except nats.js.errors.APIError:  # refused a consumer, or a pull: this read goes by direct gets
                pass
        return await self._notifications_from(self._direct_page, first, limit, stop, topics)

    async def _direct_page(self, seq: int, page: int, timeout: float) -> tuple[list[RawMsg], bool]:
        subject = self.connection.names.prefix(self.purpose) + ".>"
        msgs, pending = await self.connection.client.direct_batch(self.stream, subject, seq, page, timeout)
        return msgs, pending > 0

    async def _notifications_from(self, read: Page, first: int, limit: int, stop: int | None,
                                  topics: frozenset[str]) -> list[Notification]:
        """Notifications from `first` on, by pages `read(seq, count, timeout) -> (messages, more may follow)`."""
        found: list[Notification] = []
        seq = first
        while len(found) < limit:
            page = PAGE if topics else min(PAGE, limit - len(found))
            msgs, more = await read(seq, page, self.connection.op_timeout)
            for msg in msgs:
                if stop is not None and msg.seq > stop:
                    return found
                if is_tracking(msg) or not is_event(msg) or (topics and msg.headers["Roving-Topic"] not in topics):
                    continue
                found.append(notification_of(msg))
                if len(found) == limit:
                    return found
            if not msgs or not more:
                break
            seq = msgs[-1].seq + 1
        return found

    def max_notification_id(self) -> int | None:
        last = self.connection.run(lambda: self.connection.client.last_sequence(self.stream))
        return last or None

    def log_identity(self) -> tuple[str, int]:
        """Which log this is (the stream and its creation time) and its last position: a saved view may only
        be restored into the log it was built from, and never from a position past the log's end."""
        return self.connection.run(lambda: self.connection.client.stream_identity(self.stream))

    def subscribe(self, gt: int | None = None, topics: Sequence[str] = ()) -> Subscription[ApplicationRecorder]:
        return JetStreamSubscription(self, gt=gt, topics=topics)


class JetStreamProcessRecorder(JetStreamApplicationRecorder, ProcessRecorder):
    """Events and the upstream position land in one atomic batch on the same stream."""

    def insert_tracking(self, tracking: Tracking) -> None:
        self._insert([], tracking)

    def max_tracking_id(self, application_name: str) -> int | None:
        last = self.connection.run(lambda: self.committer.last_tracking(application_name))
        return int(last.data) if last is not None else None


class JetStreamTrackingRecorder(TrackingRecorder):
    """Positions of projections whose view lives elsewhere, on `roving_tracking.<cluster>.<app>`."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.stream = connection.ensure("tracking")
        self.names = connection.names

    def _last(self, application_name: str) -> RawMsg | None:
        subject = self.names.tracking_subject("tracking", application_name)
        return self.connection.run(lambda: self.connection.client.direct_last(
            self.stream, subject, self.connection.op_timeout))

    def insert_tracking(self, tracking: Tracking) -> None:
        last = self._last(tracking.application_name)
        if last is not None and int(last.data) >= tracking.notification_id:
            raise IntegrityError(
                f"{tracking.application_name} already tracked {int(last.data)}; "
                f"cannot record {tracking.notification_id}"
            )
        subject = self.names.tracking_subject("tracking", tracking.application_name)
        headers = {"Nats-Expected-Last-Subject-Sequence": str(last.seq if last else 0)}
        try:
            self.connection.run(lambda: self.connection.client.publish(
                subject, str(tracking.notification_id).encode(), headers, self.connection.op_timeout))
        except WrongLastSequence as error:
            latest = self._last(tracking.application_name)
            if latest is None or int(latest.data) != tracking.notification_id:
                raise IntegrityError(f"{tracking.application_name} was tracked concurrently") from error

    def max_tracking_id(self, application_name: str) -> int | None:
        last = self._last(application_name)
        return int(last.data) if last is not None else None

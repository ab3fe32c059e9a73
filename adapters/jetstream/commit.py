"""One commit to the log: a save's events (and a tracking position) become an all-or-nothing publish."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from eventsourcing.persistence import IntegrityError, OperationalError, StoredEvent, Tracking

from adapters.jetstream.client import JetStreamClient, RawMsg
from adapters.jetstream.grouping import CommitQueue, Reply
from adapters.jetstream.messages import is_event, version_of
from adapters.jetstream.parts import Part, group
from adapters.jetstream.refusals import TRANSIENT, DuplicateBatch, WrongLastSequence
from adapters.jetstream.subjects import StreamNames, kind_of

EXPECTED = "Nats-Expected-Last-Subject-Sequence"
EXPECTED_SUBJECT = "Nats-Expected-Last-Subject-Sequence-Subject"
MAX_CONFLICT_ROUNDS = 8
GROUPING = True  # commits share batches under load; benchmarks turn it off for their baseline


class MovedOn(IntegrityError):
    """A commit refused because these aggregates moved past what the writer knew: `moved` maps each to the version
    the log holds, so the writer need doubt only these (and not every aggregate the commit touched)."""

    def __init__(self, message: str, moved: dict[object, int]) -> None:
        super().__init__(message)
        self.moved = moved


class Heads:
    """Bounded memory of each aggregate's last (version, sequence): saves need no read first."""

    def __init__(self, size: int = 100_000) -> None:
        self._heads: OrderedDict[object, tuple[int, int]] = OrderedDict()
        self._size = size

    def remember(self, originator_id: object, version: int, seq: int) -> None:
        self._heads[originator_id] = (version, seq)
        self._heads.move_to_end(originator_id)
        if len(self._heads) > self._size:
            self._heads.popitem(last=False)

    def forget(self, originator_id: object) -> None:
        self._heads.pop(originator_id, None)

    def known(self, originator_id: object) -> tuple[int, int] | None:
        return self._heads.get(originator_id)

    def expected(self, originator_id: object, first_version: int) -> int:
        """The sequence this commit expects; a known newer version is a conflict without a round trip."""
        head = self._heads.get(originator_id)
        if head is None:
            return 0
        version, seq = head
        if version >= first_version:
            raise MovedOn(f"{originator_id} is at version {version}; cannot write {first_version} again",
                          {originator_id: version})
        return seq


@dataclass
class Committed:
    last_seq: int


class Committer:
    """Publishes commits with optimistic concurrency, retrying lost acks without duplicating; commits that
    arrive while a batch is in flight share the next one (unless GROUPING is off; see
    adapters.jetstream.grouping)."""

    def __init__(self, client: JetStreamClient, names: StreamNames, purpose: str, heads: Heads,
                 op_timeout: float, retry_for: float, anchors: Heads | None = None) -> None:
        self.client, self.names, self.purpose, self.heads = client, names, purpose, heads
        self.anchors = anchors  # where a catch-up read may start: a write is a place in the subject too
        self.stream = names.stream(purpose)
        self.op_timeout, self.retry_for = op_timeout, retry_for
        self.queue = CommitQueue(self) if GROUPING else None

    def message(self, event: StoredEvent, expected: int | None) -> tuple[str, bytes, dict[str, str]]:
        oid = event.originator_id
        headers = {
            "Nats-Msg-Id": f"{oid}:{event.originator_version}",
            "Roving-Topic": event.topic,
            "Roving-Version": str(event.originator_version),
        }
        if not isinstance(oid, uuid.UUID):
            headers["Roving-Id-Type"] = "str"
        if expected is not None:
            headers[EXPECTED] = str(expected)
            headers[EXPECTED_SUBJECT] = self.names.aggregate_filter(self.purpose, oid)
        return self.names.subject(self.purpose, kind_of(event.topic), oid), event.state, headers

    def tracking_message(self, tracking: Tracking, expected: int) -> tuple[str, bytes, dict[str, str]]:
        subject = self.names.tracking_subject(self.purpose, tracking.application_name)
        headers = {EXPECTED: str(expected), "Nats-Msg-Id": f"{subject}:{tracking.notification_id}"}
        return subject, str(tracking.notification_id).encode(), headers

    async def last_tracking(self, application_name: str) -> RawMsg | None:
        subject = self.names.tracking_subject(self.purpose, application_name)
        return await self.client.direct_last(self.stream, subject, self.op_timeout)

    async def commit(self, stored_events: Sequence[StoredEvent], tracking: Tracking | None) -> list[int]:
        """The events' stream sequences. Commits without tracking may share a batch (see grouping)."""
        parts = group(stored_events)
        if tracking is None and self.queue is not None:
            return await self.queue.commit(parts)
        return await self.commit_parts(parts, self.expectations(parts), tracking)

    def submit(self, stored_events: Sequence[StoredEvent], done: Callable[[Any, BaseException | None], None]) -> None:
        """On the loop thread, for a synchronous caller (`LoopThread.call`): a commit without tracking joins the
        group commit, and `done` is called with its sequences as soon as its batch is acknowledged."""
        assert self.queue is not None, "submit needs the group commit (GROUPING on)"
        self.queue.submit(group(stored_events), Reply(done), at_once=True)

    def expectations(self, parts: list[Part]) -> dict[object, int]:
        """Each aggregate's last sequence as far as this writer knows (0: none known); a known version at or
        past the commit's first is a conflict at once, without a round trip."""
        return {p.originator_id: self.heads.expected(p.originator_id, p.first) for p in parts}

    async def commit_parts(self, parts: list[Part], expected: dict[object, int], tracking: Tracking | None,
                           retried: bool = False) -> list[int]:
        """One commit on its own; `retried` when an earlier attempt may have landed (its ack was lost)."""
        track_expected = await self._tracking_expectation(tracking) if tracking else None
        deadline, attempt, delay = time.monotonic() + self.retry_for, int(retried), 0.05
        while True:
            messages = self.messages(parts, expected, tracking, track_expected)
            try:
                last_seq = await self.publish(messages)
                break
            except (WrongLastSequence, DuplicateBatch) as conflict:
                outcome = await self._reconcile(parts, tracking, retried=attempt > 0)
                if isinstance(outcome, Committed):
                    last_seq = outcome.last_seq
                    break
                expected, track_expected = outcome
                attempt += 1
                if attempt > MAX_CONFLICT_ROUNDS:
                    raise IntegrityError(
                        "gave up after repeated concurrent writes to the same aggregates") from conflict
            except TRANSIENT as error:
                attempt += 1
                if time.monotonic() > deadline:
                    raise OperationalError(f"commit not acknowledged within {self.retry_for:.0f}s: {error!r}") from error
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)
        return self.remember(parts, last_seq, len(messages))

    def messages(self, parts, expected, tracking, track_expected):
        messages = []
        for part in parts:
            for index, event in enumerate(part.events):
                messages.append(self.message(event, expected[part.originator_id] if index == 0 else None))
        if tracking is not None:
            messages.append(self.tracking_message(tracking, track_expected))
        return messages

    async def publish(self, messages) -> int:
        if len(messages) == 1:
            subject, data, headers = messages[0]
            return await self.client.publish(subject, data, headers, self.op_timeout)
        return await self.client.publish_batch(uuid.uuid4().hex, messages, self.op_timeout)

    def send(self, messages, done: Callable[[int | None, BaseException | None], None]) -> None:
        """`publish` for the group commit: on the loop, without awaiting; `done` gets the last sequence."""
        self.client.send(messages, self.op_timeout, done)

    def remember(self, parts: list[Part], last_seq: int, count: int) -> list[int]:
        seqs = list(range(last_seq - count + 1, last_seq + 1))
        position = 0
        for part in parts:
            position += len(part.events)
            self.heads.remember(part.originator_id, part.last.originator_version, seqs[position - 1])
            if self.anchors is not None:
                self.anchors.remember(part.originator_id, part.last.originator_version, seqs[position - 1])
        return seqs[:position]

    async def _tracking_expectation(self, tracking: Tracking) -> int:
        last = await self.last_tracking(tracking.application_name)
        if last is not None and int(last.data) >= tracking.notification_id:
            raise IntegrityError(
                f"{tracking.application_name} already tracked {int(last.data)}; "
                f"cannot record {tracking.notification_id}"
            )
        return last.seq if last else 0

    async def _last_version(self, subject: str) -> int:
        """The version of the last event on `subject` (0: none), read through: messages that are no event follow it."""
        version, start = 0, 1
        while True:
            msgs, pending = await self.client.direct_batch(self.stream, subject, start, 256, self.op_timeout)
            version = max([version] + [version_of(m) for m in msgs if is_event(m)])
            if not msgs or pending == 0:
                return version
            start = msgs[-1].seq + 1

    async def _reconcile(self, parts: list[Part], tracking: Tracking | None, retried: bool):
        """After a refused commit: a real conflict, our own earlier attempt that landed, or stale heads."""
        expected: dict[object, int] = {}
        landed: list[int] = []
        moved: dict[object, int] = {}
        for part in parts:
            subject = self.names.aggregate_filter(self.purpose, part.originator_id)
            last = await self.client.direct_last(self.stream, subject, self.op_timeout)
            if last is not None and not is_event(last):  # passed over (messages.is_event), yet the fence's sequence
                version = await self._last_version(subject)
                if version < part.first:
                    expected[part.originator_id] = last.seq
                else:
                    self.heads.forget(part.originator_id)
                    moved[part.originator_id] = version
            elif last is None:
                expected[part.originator_id] = 0
            elif version_of(last) < part.first:
                expected[part.originator_id] = last.seq
            elif retried and version_of(last) == part.last.originator_version and last.data == part.last.state:
                landed.append(last.seq)
            else:
                self.heads.forget(part.originator_id)
                moved[part.originator_id] = version_of(last)
        if moved:
            raise MovedOn("; ".join(f"aggregate {oid} already has version {version}" for oid, version in moved.items())
                          + ": this commit was decided on older versions", moved)
        track_expected = None
        if tracking is not None:
            last = await self.last_tracking(tracking.application_name)
            if retried and last is not None and int(last.data) == tracking.notification_id:
                landed.append(last.seq)
            else:
                track_expected = await self._tracking_expectation(tracking)
        if landed and not expected and track_expected is None:
            return Committed(max(landed))
        if landed:
            raise IntegrityError("a concurrent writer interleaved with a retried commit")
        return expected, track_expected

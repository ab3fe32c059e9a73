"""Pages of the log read through a pull consumer kept between pages: the fast path of a long replay.

A direct get costs the server a lookup per message: 20-50 us of its CPU each, measured on a 100,000-event
log, so the server alone held replay under 30,000 events/s. A consumer reads the stream in order for about
3 us a message. So a long read of the log takes its pages from one ephemeral pull consumer (no acks, in
memory, dropped by the server after a while unused), kept for as long as each page starts where the last
one ended; a page starting anywhere else gets a new consumer. The messages arrive on an inbox of their own,
read straight from nats-py's parser (see `inbox`); a message's stream sequence is in its `$JS.ACK` reply.
"""

from __future__ import annotations

import asyncio
import json

import nats.js.errors
import structlog
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from adapters.jetstream.client import REQUESTS
from adapters.jetstream.inbox import RawMsg, parse_headers, read_headers

IDLE = 30.0  # seconds the server keeps a consumer nobody reads from
log = structlog.get_logger("roving.nats")


def sequence_of(reply: bytes) -> int:
    """The stream sequence in a `$JS.ACK` subject: `$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>...`, or
    with a domain and an account hash after `ACK` (12 tokens)."""
    return ack_of(reply)[1]


def ack_of(reply: bytes) -> tuple[bytes, int]:
    """The consumer and the stream sequence a `$JS.ACK` subject names."""
    tokens = reply.split(b".")
    return (tokens[3], int(tokens[5])) if len(tokens) == 9 else (tokens[5], int(tokens[7]))


class Pull:
    """One pull request's messages, until `count` have arrived or a status (404 no more, 408...) ends it."""

    __slots__ = ("done", "messages", "count", "consumer")

    def __init__(self, loop: asyncio.AbstractEventLoop, count: int, consumer: str) -> None:
        self.done: asyncio.Future[str] = loop.create_future()
        self.messages: list[RawMsg] = []
        self.count = count
        self.consumer = consumer.encode()

    def add(self, subject: bytes, reply: bytes, data: bytes, raw_headers: bytes | None) -> None:
        if self.done.done():
            return
        if not reply:
            self.done.set_result(parse_headers(raw_headers).get("Status", ""))
            return
        consumer, seq = ack_of(reply)
        if consumer != self.consumer:  # a late message of a consumer given up on
            return
        self.messages.append(RawMsg(seq, subject.decode(), read_headers(raw_headers), data))
        if len(self.messages) == self.count:
            self.done.set_result("")


class Cursor:
    """One reader's consumer on `stream`, and the sequence its next page starts at."""

    def __init__(self, client, stream: str, subjects: str) -> None:
        self.client, self.stream, self.subjects = client, stream, subjects
        self.consumer: str | None = None
        self.next_seq = 0
        self.usable = True  # False once the server refused a consumer (credentials that may only read)
        self.busy = False
        self._inbox: str | None = None
        self._pull: Pull | None = None

    async def page(self, first: int, count: int, timeout: float) -> tuple[list[RawMsg], bool]:
        """Up to `count` messages from sequence `first` on; and whether the log may hold more after them."""
        self.busy = True
        try:
            if self.consumer is None or first != self.next_seq:
                await self._start_at(max(first, 1), timeout)
            return await self._next(count, timeout)
        finally:
            self.busy = False

    async def _next(self, count: int, timeout: float) -> tuple[list[RawMsg], bool]:
        assert self.consumer is not None and self._inbox is not None
        pull = self._pull = Pull(asyncio.get_running_loop(), count, self.consumer)
        request = json.dumps({"batch": count, "no_wait": True}).encode()
        REQUESTS.labels("pull").inc()
        try:
            await self.client.nc.publish(
                f"$JS.API.CONSUMER.MSG.NEXT.{self.stream}.{self.consumer}", request, reply=self._inbox)
            status = await asyncio.wait_for(pull.done, timeout)
        except BaseException:
            self.consumer = None  # it may go on delivering what this page no longer waits for
            raise
        finally:
            self._pull = None
        if status not in ("", "404", "408"):
            self.consumer = None
            raise nats.errors.NoRespondersError if status == "503" else nats.js.errors.APIError(
                description=f"pull from {self.stream} answered status {status}")
        if pull.messages:
            self.next_seq = pull.messages[-1].seq + 1
        return pull.messages, status == ""

    async def _start_at(self, first: int, timeout: float) -> None:
        if self._inbox is None:
            self._inbox = self.client.nc.new_inbox()
            await self.client.inbox.subscribe(self._inbox, self._deliver)
        config = ConsumerConfig(
            deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=first, ack_policy=AckPolicy.NONE,
            filter_subject=self.subjects, inactive_threshold=IDLE, mem_storage=True, num_replicas=1,
        )
        old, self.consumer = self.consumer, None
        try:
            info = await self.client.js.add_consumer(self.stream, config, timeout=timeout)
        except nats.js.errors.APIError as error:  # not allowed (or not supported): read by direct gets
            self.usable = False
            log.warning("nats.replay_consumer_refused", stream=self.stream, error=repr(error))
            raise
        self.consumer, self.next_seq = info.name, first
        if old is not None:
            self._forget(old)

    def _forget(self, consumer: str) -> None:
        """Delete a consumer given up on, without waiting (the server would drop it after IDLE anyway)."""
        async def delete() -> None:
            try:
                await self.client.js.delete_consumer(self.stream, consumer)
            except Exception:  # noqa: BLE001 - it expires by itself
                pass

        task = asyncio.get_running_loop().create_task(delete())
        self.client.background.add(task)
        task.add_done_callback(self.client.background.discard)

    def _deliver(self, subject: bytes, reply: bytes, data: bytes, raw_headers: bytes | None) -> None:
        if self._pull is not None:
            self._pull.add(subject, reply, data, raw_headers)

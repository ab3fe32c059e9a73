"""The async JetStream edge: publish, atomic batches, direct gets; server errors become typed ones, and a
connection down for longer than a grace becomes LogUnavailable at once."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable

import nats
import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js.api import StorageType, StreamConfig
from prometheus_client import Counter

from adapters.jetstream import headers, wire
from adapters.jetstream.inbox import Ack, Answer, Batch, Inbox, RawMsg
from adapters.jetstream.link import Link, log_error
from adapters.jetstream.loop import outcome
from adapters.jetstream.refusals import LogUnavailable, ServerRefused, sequence_in
from adapters.jetstream.replicas import hold_replicas
from adapters.nats_auth import CONTROL_INBOX
from adapters.nats_tls import connect_options

MAX_BATCH = 1000
DOWN_GRACE = 5.0  # seconds a call waits for a lost connection to come back (a supervised restart takes < 1)
# What the control plane asks of the server, by kind: a cached write path reads the log only when it must, and
# ops/bench/job_cost.py reports these per job.
REQUESTS = Counter("roving_log_requests_total", "Requests made to the log's server, by kind", ["kind"])
_PUBLISH, _BATCH = REQUESTS.labels("publish"), REQUESTS.labels("atomic_batch")
_READ, _LAST, _INFO = REQUESTS.labels("read"), REQUESTS.labels("read_last"), REQUESTS.labels("stream_info")


def _raw(msg: Msg) -> RawMsg:
    headers = msg.headers or {}
    return RawMsg(int(headers["Nats-Sequence"]), headers["Nats-Subject"], headers, msg.data)


def _frames(messages: list[tuple[str, bytes, dict[str, str]]], batch_id: str | None, reply: str) -> list[bytes]:
    """One message with its reply; or the frames of an atomic batch: replies on the first and the last."""
    if batch_id is None:
        subject, data, headers = messages[0]
        return [wire.frame(subject, reply, headers, data)]
    last, frames = len(messages), []
    for number, (subject, data, headers) in enumerate(messages, start=1):
        headers = {**headers, "Nats-Batch-Id": batch_id, "Nats-Batch-Sequence": str(number)}
        if number == last:
            headers["Nats-Batch-Commit"] = "1"
        frames.append(wire.frame(subject, reply if number in (1, last) else "", headers, data))
    return frames


class JetStreamClient:
    """One nats-py connection and the few JetStream operations the recorders need."""

    def __init__(self, nc: Client, link: Link | None = None, down_grace: float = DOWN_GRACE) -> None:
        self.nc = nc
        self.link = link or Link()
        self.down_grace = down_grace
        self.js = nc.jetstream()
        self.inbox = Inbox(nc)
        self.outgoing = wire.Outgoing(nc)
        self.background: set[asyncio.Task] = set()  # held until done: the loop keeps only weak references

    @classmethod
    async def connect(cls, url: str, name: str = "roving", down_grace: float = DOWN_GRACE,
                      inbox_prefix: str = CONTROL_INBOX) -> JetStreamClient:
        """`url` carries the control plane's credentials (settings put them there); its replies arrive on an
        inbox prefix of its own, which no agent or reader may subscribe to. A `tls://` URL's `?ca=` is trusted."""
        link = Link()
        nc = await nats.connect(
            **connect_options(url), name=name,
            error_cb=log_error, disconnected_cb=link.disconnected, reconnected_cb=link.reconnected,
            max_reconnect_attempts=-1, reconnect_time_wait=0.25, connect_timeout=5, allow_reconnect=True,
            inbox_prefix=inbox_prefix,
        )
        link.nc = headers.install(nc)
        client = cls(nc, link, down_grace)
        await client.inbox.install()
        return client

    @property
    def connected(self) -> bool:
        return self.nc.is_connected

    async def available(self) -> None:
        """Return once connected. While the connection is down, wait for it until `down_grace` after it went
        down, then raise LogUnavailable: a caller learns in seconds, not after every retry has timed out."""
        while not self.nc.is_connected:
            if self.nc.is_closed:
                raise LogUnavailable("the connection to the log (NATS JetStream) is closed")
            if self.link.down_since is None:  # the callback has not run yet
                self.link.down_since = time.monotonic()
            down = time.monotonic() - self.link.down_since
            if down >= self.down_grace:
                raise LogUnavailable(f"the log (NATS JetStream) has been unreachable for {down:.1f}s")
            await asyncio.sleep(min(0.05, self.down_grace - down))

    async def close(self) -> None:
        if not self.nc.is_closed:
            await self.nc.close()

    async def ensure_stream(self, name: str, subjects: list[str], replicas: int = 1, **extra) -> None:
        try:
            await hold_replicas(self.js, name, replicas)  # a layout made with another count moves to this one
            return
        except nats.js.errors.NotFoundError:
            pass
        config = StreamConfig(
            name=name, subjects=subjects, storage=StorageType.FILE, num_replicas=replicas,
            allow_atomic=True, allow_direct=True, duplicate_window=120.0, **extra,
        )
        try:
            await self.js.add_stream(config)
        except nats.js.errors.BadRequestError as error:
            if "already in use" not in str(error):
                raise

    async def publish(self, subject: str, data: bytes, headers: dict[str, str], timeout: float) -> int:
        """One message, acknowledged on our own inbox (not nats-py's request: its ack takes three more
        turns of the loop to reach us). Returns its stream sequence."""
        await self.available()
        _PUBLISH.inc()
        ack = Ack(asyncio.get_running_loop())
        reply, key = self.inbox.open(ack)
        try:
            await self.nc.publish(subject, data, reply=reply, headers=headers)
            return await self._acknowledged(ack, timeout)
        finally:
            self.inbox.close(key)

    async def publish_batch(
        self, batch_id: str, messages: list[tuple[str, bytes, dict[str, str]]], timeout: float
    ) -> int:
        """JetStream atomic batch: every message lands, or none does. Returns the last sequence."""
        if len(messages) > MAX_BATCH:
            raise ServerRefused(10199, f"a commit holds at most {MAX_BATCH} events, not {len(messages)}")
        await self.available()
        _BATCH.inc()
        ack = Ack(asyncio.get_running_loop())
        reply, key = self.inbox.open(ack)
        try:
            last = len(messages)
            for number, (subject, data, headers) in enumerate(messages, start=1):
                headers = {**headers, "Nats-Batch-Id": batch_id, "Nats-Batch-Sequence": str(number)}
                if number == last:
                    headers["Nats-Batch-Commit"] = "1"
                await self.nc.publish(subject, data, reply=reply if number in (1, last) else "", headers=headers)
            return await self._acknowledged(ack, timeout)
        finally:
            self.inbox.close(key)

    async def _acknowledged(self, ack: Ack, timeout: float) -> int:
        _, data = await asyncio.wait_for(ack.done, timeout)
        return sequence_in(data)

    def send(self, messages: list[tuple[str, bytes, dict[str, str]]], timeout: float,
             done: Callable[[int | None, BaseException | None], None]) -> None:
        """On the loop, without awaiting: publish a commit (one message alone, more as an atomic batch) and
        call `done(last_sequence, None)` or `done(None, error)` in the turn its ack is read. Its frames are
        written in this turn when the connection allows (see `wire`), else through `publish`/`publish_batch`."""
        loop = asyncio.get_running_loop()
        batch_id = uuid.uuid4().hex if len(messages) > 1 else None
        if len(messages) > MAX_BATCH or not wire.writable(self.nc, [data for _, data, _ in messages]):
            single = messages[0]
            coro = (self.publish(*single, timeout) if batch_id is None
                    else self.publish_batch(batch_id, messages, timeout))
            loop.create_task(coro).add_done_callback(lambda task: outcome(task, done))
            return

        def answered(_: dict[str, str], data: bytes, error: BaseException | None) -> None:
            self.inbox.close(key)
            if error is not None:
                done(None, error)
                return
            try:
                seq = sequence_in(data)
            except Exception as refused:  # noqa: BLE001 - a refusal is the commit's outcome, not the loop's
                done(None, refused)
            else:
                done(seq, None)

        answer = Answer(answered)
        reply, key = self.inbox.open(answer)
        (_PUBLISH if batch_id is None else _BATCH).inc()
        self.outgoing.write(_frames(messages, batch_id, reply))
        answer.timer = loop.call_later(timeout, answer.expire)

    async def direct_batch(
        self, stream: str, subject_filter: str, start_seq: int, batch: int, timeout: float
    ) -> tuple[list[RawMsg], int]:
        """Up to `batch` messages from `start_seq` matching the filter; also how many remain."""
        await self.available()
        _READ.inc()
        request = {"seq": max(start_seq, 1), "next_by_subj": subject_filter, "batch": batch}
        replies = Batch(asyncio.get_running_loop())
        reply, key = self.inbox.open(replies)
        try:
            await self.nc.publish(f"$JS.API.DIRECT.GET.{stream}", json.dumps(request).encode(), reply=reply)
            end = await asyncio.wait_for(replies.done, timeout)
            if end.get("Status") == "503":
                raise nats.errors.NoRespondersError
            pending = int(end.get("Nats-Num-Pending", 0) or 0)
            return replies.messages, pending
        finally:
            self.inbox.close(key)

    async def direct_last(self, stream: str, subject: str, timeout: float) -> RawMsg | None:
        await self.available()
        _LAST.inc()
        request = json.dumps({"last_by_subj": subject}).encode()
        try:
            msg = await self.nc.request(f"$JS.API.DIRECT.GET.{stream}", request, timeout=timeout)
        except nats.errors.NoRespondersError:
            raise
        status = (msg.headers or {}).get("Status")
        if status == "404":
            return None
        if status is not None:
            raise ServerRefused(None, f"direct get of {subject} answered status {status}")
        return _raw(msg)

    async def stream_identity(self, stream: str) -> tuple[str, int]:
        """`name@created` (a stream deleted and made again gets a new one) and its last sequence."""
        await self.available()
        _INFO.inc()
        info = await self.js.stream_info(stream)
        return f"{stream}@{info.created}", info.state.last_seq

    async def last_sequence(self, stream: str) -> int:
        return (await self.stream_identity(stream))[1]

    async def stream_size(self, stream: str) -> tuple[int, int, int]:
        """(messages, bytes, first sequence) the stream holds now."""
        await self.available()
        _INFO.inc()
        state = (await self.js.stream_info(stream)).state
        return state.messages, state.bytes, state.first_seq

    async def purge_subject(self, stream: str, subject: str, below: int = 0) -> int:
        """Remove the messages on `subject` (a filter) from the stream, only those below sequence `below` when it
        is set; returns how many went. Purging a subject that holds nothing is not an error: a retry is harmless."""
        await self.available()
        request = {"filter": subject, **({"seq": below} if below > 0 else {})}
        answer = await self.nc.request(f"$JS.API.STREAM.PURGE.{stream}", json.dumps(request).encode(), timeout=10.0)
        body = json.loads(answer.data)
        if "error" in body:
            raise ServerRefused(None, f"purge of {subject} refused: {body['error'].get('description')}")
        return int(body.get("purged", 0))

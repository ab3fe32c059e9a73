"""Job logs on the `LOGS_<CLUSTER>` JetStream stream: batched appends, whole reads and live follows."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing

import nats.errors
import nats.js.errors
import structlog
from nats.js.api import ConsumerConfig, DeliverPolicy, DiscardPolicy, StorageType, StreamConfig

from adapters.jetstream.refusals import TRANSIENT
from adapters.jetstream.subjects import check_cluster_name, id_token

STREAM_HEADER = "Roving-Stream"
END_HEADER = "Roving-Log-End"
RANKS_HEADER = "Roving-Log-Ranks"  # on a multinode job's end markers: how many ranks each end its share of the log
MAX_AGE = 7 * 24 * 3600.0
MAX_MESSAGE = 256 * 1024
SIZE_HEADER = "Nats-Msg-Size"  # what a headers-only consumer says of each message's payload
READ_WAIT = 30.0  # seconds a read waits for the next message the stream said it holds
REPLICAS = "ROVING_NATS_REPLICAS"  # read as the event log's connection reads it (adapters/jetstream/factory.py)
log = structlog.get_logger("roving.logs")


class Logs:
    """Names, stream creation and reading of one cluster's job logs."""

    def __init__(self, js, cluster: str, max_age: float = MAX_AGE, replicas: int | None = None):
        self.js, self.cluster, self.max_age = js, check_cluster_name(cluster), max_age
        self.replicas = replicas if replicas is not None else _replicas()
        self.stream = f"LOGS_{cluster.upper().replace('-', '_')}"

    def subject(self, workflow_id: str, stage: str) -> str:
        """`roving_logs.<cluster>.<workflow>.<stage>`; `job[3]` and dots are encoded, never split a token."""
        return f"roving_logs.{self.cluster}.{id_token(workflow_id)}.{id_token(stage)}"

    async def ensure(self) -> None:
        """Create the stream (file storage, old messages age out, the configured replicas) unless it exists."""
        try:
            await self.js.stream_info(self.stream)
            return
        except nats.js.errors.NotFoundError:
            pass
        config = StreamConfig(
            name=self.stream, subjects=[f"roving_logs.{self.cluster}.>"], storage=StorageType.FILE,
            max_age=self.max_age, discard=DiscardPolicy.OLD, num_replicas=self.replicas,
        )
        try:
            await self.js.add_stream(config)
        except nats.js.errors.BadRequestError as error:
            if "already in use" not in str(error):
                raise

    async def hold_limits(self, max_bytes: int = 0) -> bool:
        """Bring an existing stream to this one's age limit and `max_bytes` (0: none; the oldest output goes first
        once it is full), whoever made it (an agent makes it with the defaults); True when it was changed."""
        config = (await self.js.stream_info(self.stream)).config
        wanted = max_bytes if max_bytes > 0 else -1
        if config.max_age == self.max_age and (config.max_bytes or -1) == wanted:
            return False
        before = {"max_age": config.max_age, "max_bytes": config.max_bytes}
        config.max_age, config.max_bytes = self.max_age, wanted
        await self.js.update_stream(config)
        log.info("logs.limits_changed", stream=self.stream, before=before, max_age=self.max_age, max_bytes=wanted)
        return True

    async def count(self, workflow_id: str, stage: str) -> int:
        """How many messages one stage's log holds."""
        subject = self.subject(workflow_id, stage)
        info = await self.js.stream_info(self.stream, subjects_filter=subject)
        return (info.state.subjects or {}).get(subject, 0)

    async def read(self, workflow_id: str, stage: str, streams: tuple[str, ...] = ("stdout", "stderr")) -> bytes:
        """Everything logged so far, stdout and stderr interleaved in the order they were written."""
        return (await self.read_range(workflow_id, stage, streams=streams))[0]

    async def read_range(self, workflow_id: str, stage: str, offset: int = 0, limit: int | None = None,
                         streams: tuple[str, ...] = ("stdout", "stderr")) -> tuple[bytes, int]:
        """(the log's bytes from `offset` (a negative one counts from the end), `limit` of them at most (None: all),
        how many bytes it holds so far). A window reads the messages' sizes first (headers only), then the bytes
        of the messages it covers, never the whole log."""
        if await self.count(workflow_id, stage) == 0:
            return b"", 0
        total, first, before = 0, 0, 0
        if offset != 0 or limit is not None:
            sizes = await self._sizes(workflow_id, stage, streams)
            total = sum(size for _, size in sizes)
            found = _first_message(sizes, start_of(offset, total))
            if found is None:
                return b"", total
            first, before = found
        window = Window(start_of(offset, total) - before, limit)
        async with aclosing(self._messages(workflow_id, stage, streams, first)) as messages:
            async for chunk, _, last, _ in messages:
                window.add(chunk)
                if last or window.full():
                    break
        return window.data(), max(total, before + window.total)

    async def _sizes(self, workflow_id: str, stage: str, streams: tuple[str, ...]) -> list[tuple[int, int]]:
        """(stream sequence, bytes) of each output message of the stage in `streams`, read as headers only."""
        sub = await self.js.subscribe(self.subject(workflow_id, stage), ordered_consumer=True,
                                      deliver_policy=DeliverPolicy.ALL, headers_only=True)
        found = []
        try:
            while True:
                msg = await sub.next_msg(timeout=READ_WAIT)
                headers = msg.headers or {}
                if headers.get(STREAM_HEADER, "") in streams:
                    found.append((msg.metadata.sequence.stream, int(headers.get(SIZE_HEADER) or 0)))
                if msg.metadata.num_pending == 0:
                    return found
        finally:
            await sub.unsubscribe()

    async def follow(
        self, workflow_id: str, stage: str, streams: tuple[str, ...] = ("stdout", "stderr")
    ) -> AsyncIterator[bytes]:
        """Chunks from the beginning, then live ones, until the stage's end marker arrives (a multinode job's: one
        from every rank)."""
        async with aclosing(self.follow_streams(workflow_id, stage, streams)) as labelled:
            async for _, chunk in labelled:
                yield chunk

    async def follow_streams(
        self, workflow_id: str, stage: str, streams: tuple[str, ...] = ("stdout", "stderr")
    ) -> AsyncGenerator[tuple[str, bytes], None]:
        """As `follow`, each chunk with the stream it was written to (`roving run` keeps them apart)."""
        ends = 0
        async with aclosing(self._messages(workflow_id, stage, streams)) as messages:
            async for chunk, ranks, _, stream in messages:
                ends += bool(ranks)
                if ranks and ends >= ranks:
                    return
                if chunk:
                    yield stream, chunk

    async def _messages(self, workflow_id: str, stage: str, streams: tuple[str, ...], first: int = 0):
        """(chunk, ranks its end marker counts (0: not one), nothing pending, its stream) for each message of the
        stage (from stream sequence `first`, else all), via an ordered consumer."""
        subject = self.subject(workflow_id, stage)
        if first:
            sub = await self.js.subscribe(subject, ordered_consumer=True, deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
                                          config=ConsumerConfig(opt_start_seq=first))
        else:
            sub = await self.js.subscribe(subject, ordered_consumer=True, deliver_policy=DeliverPolicy.ALL)
        try:
            while True:
                try:
                    msg = await sub.next_msg(timeout=3600)
                except nats.errors.TimeoutError:
                    continue
                headers = msg.headers or {}
                ended = _ranks(headers.get(RANKS_HEADER)) if END_HEADER in headers else 0
                stream = headers.get(STREAM_HEADER, "")
                chunk = msg.data if stream in streams else b""
                yield chunk, ended, msg.metadata.num_pending == 0, stream
        finally:
            await sub.unsubscribe()


class LogWriter(Logs):
    """Buffers output chunks in memory and publishes them in the background, coalescing small writes (the
    agent ships from its disk spool instead: adapters/log_shipper.py)."""

    def __init__(self, js, cluster: str, flush_interval: float = 0.2, max_age: float = MAX_AGE):
        super().__init__(js, cluster, max_age)
        self.flush_interval = flush_interval
        self._pending: list[tuple[str, dict[str, str], bytearray]] = []
        self._task: asyncio.Task | None = None
        self._flushing = asyncio.Lock()

    @property
    def pending(self) -> bool:
        """Output or an end mark is queued, not yet published."""
        return bool(self._pending)

    async def start(self) -> LogWriter:
        await self.ensure()
        self._task = asyncio.create_task(self._flush_forever())
        return self

    def append(self, workflow_id: str, stage: str, stream: str, chunk: bytes) -> None:
        """Queue a chunk; never waits on the server (call on the loop thread)."""
        subject = self.subject(workflow_id, stage)
        last = self._pending[-1] if self._pending else None
        if last and last[0] == subject and last[1].get(STREAM_HEADER) == stream and len(last[2]) + len(chunk) <= MAX_MESSAGE:
            last[2].extend(chunk)
        else:
            self._pending.append((subject, {STREAM_HEADER: stream}, bytearray(chunk)))

    def end(self, workflow_id: str, stage: str, reason: str, ranks: int = 1) -> None:
        """Mark the stage's log complete so followers stop (a rank of a multinode job: once all `ranks` have)."""
        headers = {END_HEADER: reason or "exited", **({RANKS_HEADER: str(ranks)} if ranks > 1 else {})}
        self._pending.append((self.subject(workflow_id, stage), headers, bytearray()))

    async def flush(self) -> None:
        """Publish what is queued, in order; on a transient failure keep the rest for the next flush.

        One flush at a time (the background flusher and a caller's flush would both send the head), and the
        head leaves the queue before its publish, so an append made meanwhile starts a new message instead of
        growing one already on the wire."""
        async with self._flushing:
            while self._pending:
                item = self._pending.pop(0)
                subject, headers, data = item
                try:
                    await self.js.publish(subject, bytes(data), headers=headers)
                except TRANSIENT as error:
                    log.warning("logs.publish_failed", subject=subject, error=repr(error))
                    self._pending.insert(0, item)
                    return
                except nats.js.errors.APIError as error:  # refused for good (e.g. too large): drop, keep going
                    log.warning("logs.publish_refused", subject=subject, error=repr(error))

    async def close(self) -> None:
        """Stop the background flusher and publish what is left."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        await self.flush()

    async def _flush_forever(self) -> None:
        while True:
            await asyncio.sleep(self.flush_interval)
            await self.flush()


class Window:
    """The bytes in [offset, offset + limit) of chunks read in order from the log's start (or a message's)."""

    def __init__(self, offset: int, limit: int | None) -> None:
        self.offset, self.limit, self.total, self.kept = offset, limit, 0, bytearray()

    def add(self, chunk: bytes) -> None:
        start, self.total = self.total, self.total + len(chunk)
        end = None if self.limit is None else self.offset + self.limit
        if self.total > self.offset and (end is None or start < end):
            self.kept += chunk[max(0, self.offset - start):None if end is None else end - start]

    def full(self) -> bool:
        return self.limit is not None and len(self.kept) >= self.limit

    def data(self) -> bytes:
        return bytes(self.kept)


def _first_message(sizes: list[tuple[int, int]], start: int) -> tuple[int, int] | None:
    """(sequence of the message holding byte `start`, bytes before it); None when the log is shorter."""
    before = 0
    for sequence, size in sizes:
        if before + size > start:
            return sequence, before
        before += size
    return None


def start_of(offset: int, total: int) -> int:
    """Where a window asked for at `offset` (negative: from the end) starts in a log of `total` bytes."""
    return offset if offset >= 0 else max(0, total + offset)


def _replicas() -> int:
    try:
        return max(1, int(os.environ.get(REPLICAS) or 1))
    except ValueError:
        return 1


def _ranks(text: str | None) -> int:
    """An end marker's rank count; anything but a positive number counts as one (a plain end)."""
    try:
        return max(1, int(text or 1))
    except ValueError:
        return 1

"""The control plane's own reply inbox, served straight from nats-py's parser.

Acks of publishes and the messages of direct-get batches arrive on `<inbox>.<token>`. nats-py would make a
`Msg` of each, parse every header line in Python, queue it for a subscription task and call a coroutine per
message: most of replay's time, and three event-loop turns on every save's ack. So `Inbox.install` puts
itself in front of the client's `_process_msg` for this subscription and the others made by `subscribe`
(every other one goes the usual way), with a fast lane in the parser for them (see `parser`): an ack
resolves its waiter in the same turn it is read, and a message of a page of the log becomes a `RawMsg`
with only the headers the recorders read.
"""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Callable
from typing import NamedTuple

from nats.aio.client import Client

from adapters.jetstream import parser
from adapters.jetstream.parser import Handler

_STATUS = "Status"
# The headers the recorders read of a stored message; a message of a page of the log carries only these
READ = ("Nats-Sequence", "Nats-Subject", "Roving-Topic", "Roving-Version", "Roving-Id-Type")
_READ = re.compile("\n(" + "|".join(READ) + "): *([^\r]*)")


def read_headers(raw: bytes | None) -> dict[str, str]:
    """The READ headers of a stored message: one scan for the few names read, not a dict of all fifteen
    (that was most of replay's time)."""
    return dict(_READ.findall(raw.decode("utf-8", "replace"))) if raw else {}


class RawMsg(NamedTuple):  # a tuple: built for every message of a replay, at half a frozen dataclass's cost
    seq: int
    subject: str
    headers: dict[str, str]
    data: bytes


def parse_headers(raw: bytes | None) -> dict[str, str]:
    """The header block of a message (`NATS/1.0[ status[ description]]` then lines) as a dict; an inline
    status is under `Status`, as nats-py puts it."""
    if not raw:
        return {}
    text = raw.decode("utf-8", "replace")
    headers = {}
    for line in text.split("\r\n")[1:]:  # `Name: value` lines; the last of a repeated name wins, as in nats-py
        name, colon, value = line.partition(":")
        if colon and name and not name.isspace():
            headers[name] = value.strip()
    if text.startswith("NATS/1.0 "):
        code = text[9:12]
        if code.isdigit():
            headers[_STATUS] = code
    return headers


class Ack:
    """Waits for the one reply that ends a publish: a status (no responders) or the server's JSON ack."""

    __slots__ = ("done",)

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.done: asyncio.Future[tuple[dict[str, str], bytes]] = loop.create_future()

    def add(self, data: bytes, raw_headers: bytes | None) -> None:
        if self.done.done():
            return
        headers = parse_headers(raw_headers)
        if _STATUS in headers or data:
            self.done.set_result((headers, data))


class Answer:
    """Like `Ack`, for a caller that is not a coroutine: `on_answer(headers, data, error)` is called in the
    turn the reply is read, or with a TimeoutError once `expire` runs first (its timer is set by the caller)."""

    __slots__ = ("on_answer", "timer", "answered")

    def __init__(self, on_answer: Callable[[dict[str, str], bytes, BaseException | None], None]) -> None:
        self.on_answer = on_answer
        self.timer: asyncio.TimerHandle | None = None
        self.answered = False

    def add(self, data: bytes, raw_headers: bytes | None) -> None:
        if self.answered:
            return
        headers = parse_headers(raw_headers)
        if _STATUS in headers or data:
            self.answered = True
            if self.timer is not None:
                self.timer.cancel()
            self.on_answer(headers, data, None)

    def expire(self) -> None:
        if not self.answered:
            self.answered = True
            self.on_answer({}, b"", TimeoutError())


class Batch:
    """Collects a direct-get batch until its closing status (204 end of batch, 404, 408, 503). Its messages'
    `headers` hold only the names in READ."""

    __slots__ = ("done", "messages")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.done: asyncio.Future[dict[str, str]] = loop.create_future()
        self.messages: list[RawMsg] = []

    def add(self, data: bytes, raw_headers: bytes | None) -> None:
        if self.done.done():
            return
        if raw_headers is None or raw_headers[8:9] == b" ":  # `NATS/1.0 204 EOB`: the batch's end
            self.done.set_result(parse_headers(raw_headers))
            return
        headers = read_headers(raw_headers)
        self.messages.append(RawMsg(int(headers["Nats-Sequence"]), headers["Nats-Subject"], headers, data))


class Inbox:
    """`<prefix>.<token>` replies routed to the waiter opened for each token."""

    def __init__(self, nc: Client) -> None:
        self.nc = nc
        self.prefix = nc.new_inbox()
        self._waiters: dict[bytes, Ack | Answer | Batch] = {}
        self._tokens = itertools.count()
        self._handlers: dict[int, Handler] = {}

    async def install(self) -> None:
        passthrough = self.nc._process_msg
        handlers = self._handlers

        async def process(sid: int, subject: bytes, reply: bytes, data: bytes, headers: bytes) -> None:
            handler = handlers.get(sid)
            if handler is not None:
                handler(subject, reply, data, headers)
            else:
                await passthrough(sid, subject, reply, data, headers)

        self.nc._process_msg = process  # type: ignore[method-assign]  # our dispatch in front of nats-py's
        parser.install(self.nc, handlers)  # and before it, a fast lane for the same subscriptions
        await self.subscribe(self.prefix + ".*", self._deliver)

    async def subscribe(self, subject: str, handler: Handler) -> int:
        """A subscription whose messages go to `handler(subject, reply, data, raw_headers)` as they are read,
        in the reading turn (it must not block). Returns its sid."""
        sub = await self.nc.subscribe(subject)
        self._handlers[sub._id] = handler
        return sub._id

    def _deliver(self, subject: bytes, reply: bytes, data: bytes, headers: bytes | None) -> None:
        waiter = self._waiters.get(subject[subject.rfind(b".") + 1:])
        if waiter is not None:
            waiter.add(data, headers)

    def open(self, waiter: Ack | Answer | Batch) -> tuple[str, bytes]:
        """The reply subject for `waiter`, and the token to `close` it with."""
        token = str(next(self._tokens))
        key = token.encode()
        self._waiters[key] = waiter
        return f"{self.prefix}.{token}", key

    def close(self, key: bytes) -> None:
        self._waiters.pop(key, None)

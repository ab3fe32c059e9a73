"""The agent's end of the agent bus: its node's assignments pushed over NATS, opened with the node's key, checked
(this node, this epoch, newer than the last, fresh) and handed to the agent's loop, which applies them as it
applies a poll's answer. The long poll stays the catch-up: until a push has been heard on this connection (and
after every disconnect) the agent does not tell its polls it hears the bus, so they answer as before.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import msgspec
import nats
import structlog

from adapters.agent_bus import Unsealed, key_of_text, open_sealed, reports_subject, seal, starts_subject
from adapters.nats_tls import connect_options
from api.agent.starts import Refused, decode_assignments
from domain.agent_protocol import Assignments, BatchResults, Config, Pushed, Reports, Start

log = structlog.get_logger("roving.agent")
REPORT_TIMEOUT = 5.0  # seconds a batch waits for its answer over the bus before it goes over HTTP
BUS_PAUSE = 60.0  # after a batch the bus did not answer (an older control plane): HTTP only, for this long
FRESH_NS = 120 * 10**9  # a push older (or newer) than this by the agent's clock is refused: a replay, or a skew
Heard = tuple[Assignments[Start], list[Refused], str]  # the answer, its unreadable run specs, its ETag


class AgentBus:
    """Subscribed to the node's subject once the node has a key and the control plane names a NATS URL."""

    def __init__(self, node: Callable[[], str | None], wake: asyncio.Event) -> None:
        self.node, self.wake = node, wake
        self.key: bytes | None = None
        self.epoch = 0
        self.live = False  # a push was heard on this connection: polls may say so (`bus=1`)
        self.missed = False  # the connection dropped: pushes may have been lost, the next poll must not wait
        self.heard: list[Heard] = []
        self.nc: Any = None
        self.subscription: Any = None
        self.subject = ""
        self.cluster = ""
        self._last_seq = 0
        self._paused_until = 0.0
        self._connecting: asyncio.Task[None] | None = None

    def keyed(self, epoch: int, text: str) -> None:
        """The key of the node's current epoch, from its registration or heartbeat answer ("": none)."""
        key = key_of_text(text) if text else None
        if (key, epoch) != (self.key, self.epoch):
            self.key, self.epoch, self.live, self._last_seq = key, epoch, False, 0

    def start(self, answer: Config | None) -> None:
        """Connect in the background: nats-py's first connect keeps trying while the server is away, and the agent's
        polls (its work, its reports) must go on meanwhile."""
        if self._connecting is None or self._connecting.done():
            self._connecting = asyncio.create_task(self.connect(answer))

    async def connect(self, answer: Config | None) -> None:
        """Connect and subscribe (once); an agent without a NATS URL, or a server that refuses it, just polls."""
        if self.nc is not None or answer is None or not answer.nats_url or not answer.cluster:
            return
        self.cluster = answer.cluster

        async def lost() -> None:
            self.live, self.missed = False, True

        async def errored(error: Exception) -> None:  # a permissions violation lands here: polls carry on
            self.live = False
            log.warning("agent.bus_error", error=repr(error))

        try:
            self.nc = await nats.connect(**connect_options(answer.nats_url), connect_timeout=2,
                                         max_reconnect_attempts=-1, disconnected_cb=lost, error_cb=errored)
        except (TimeoutError, OSError, nats.errors.Error) as error:
            log.warning("agent.bus_unreachable", error=repr(error))
            return
        await self.follow_node()

    async def follow_node(self) -> None:
        """Subscribe to the node's subject (again when the node id changed)."""
        node = self.node()
        if self.nc is None or node is None or self.subject == starts_subject(self.cluster, node):
            return
        try:
            if self.subscription is not None:
                await self.subscription.unsubscribe()
            self.subscription = await self.nc.subscribe(starts_subject(self.cluster, node), cb=self._received)
        except (OSError, nats.errors.Error) as error:  # the agent's round goes on; the next one tries again
            log.warning("agent.bus_subscribe_failed", error=repr(error))
            return
        self.subject = starts_subject(self.cluster, node)

    async def close(self) -> None:
        if self._connecting is not None and not self._connecting.done():
            self._connecting.cancel()
            await asyncio.gather(self._connecting, return_exceptions=True)
        if self.nc is not None:
            try:
                await asyncio.wait_for(self.nc.close(), 2)
            except (TimeoutError, OSError, nats.errors.Error):
                pass
            except asyncio.CancelledError:  # nats-py's close can raise its transport's cancelled close waiter (a
                task = asyncio.current_task()  # connection lost while closing); only our own cancellation goes on
                if task is not None and task.cancelling():
                    raise
                log.warning("agent.bus_close_interrupted")
            self.nc = None

    async def report(self, batch: Reports) -> BatchResults | None:
        """The batch's results from the control plane over the bus; None when it must go over HTTP instead (no
        key or connection, no answer, or a refusal, whose reason HTTP's answer will give as the protocol has it).
        Only once a push was heard on this connection: it proves the control plane speaks the bus and the server
        lets this agent use it (a site whose NATS users predate it would let every batch wait out the timeout)."""
        node = self.node()
        if (not self.live or self.nc is None or self.key is None or node is None
                or time.monotonic() < self._paused_until):
            return None
        subject = reports_subject(self.cluster, node)
        try:
            answer = await self.nc.request(subject, seal(self.key, self.epoch, subject, msgspec.json.encode(batch)),
                                           timeout=REPORT_TIMEOUT)
            results = msgspec.json.decode(open_sealed(self.key, subject + ".answer", answer.data), type=BatchResults)
        except (TimeoutError, nats.errors.Error, OSError) as error:  # no responder: an older control plane
            self._paused_until = time.monotonic() + BUS_PAUSE
            log.info("agent.bus_reports_unanswered", error=repr(error), http_for_s=BUS_PAUSE)
            return None
        except (Unsealed, msgspec.DecodeError):
            log.warning("agent.bus_reports_refused", answer=bytes(answer.data[:300]).decode(errors="replace"))
            return None
        return results

    def take(self) -> list[Heard]:
        heard, self.heard = self.heard, []
        return heard

    async def _received(self, message: Any) -> None:
        try:
            pushed = self.opened(message.subject, message.data)
            answer, refused = decode_assignments(pushed.assignments)
        except (Unsealed, msgspec.DecodeError) as refusal:
            # only the control plane may publish here: a push refused (a new leader's clock behind the old one's, a
            # key not learnt yet) is work not taken, so the polls stop saying they hear the bus and the next answers
            self.live, self.missed = False, True
            self.wake.set()
            log.warning("agent.push_refused", reason=str(refusal), subject=message.subject)
            return
        self.live = True
        self.heard.append((msgspec.structs.replace(answer, volumes=None), refused, pushed.etag))
        self.wake.set()

    def opened(self, subject: str, data: bytes) -> Pushed:
        """The push, if it is this node's at its epoch, newer than the last one taken and fresh; Unsealed if not."""
        if self.key is None:
            raise Unsealed("no key yet: the node has not registered or heartbeated")
        pushed = msgspec.json.decode(open_sealed(self.key, subject, data), type=Pushed)
        if str(pushed.node_id) != self.node() or pushed.epoch != self.epoch:
            raise Unsealed(f"a push for node {pushed.node_id} epoch {pushed.epoch}, not this node's")
        if pushed.seq <= self._last_seq:
            raise Unsealed("a push no newer than one taken already (replayed, or overtaken)")
        if abs(time.time_ns() - pushed.seq) > FRESH_NS:
            raise Unsealed("a push from more than 120 s away by this node's clock (replayed, or the clocks differ)")
        self._last_seq = pushed.seq
        return pushed

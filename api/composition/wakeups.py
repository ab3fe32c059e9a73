"""Wake-ups from the log: who must act now that the views applied a batch (agents waiting, the scheduler).

`LogSignals` stands between the tailer and the views (it is the follower's target): it applies each batch to
the views, then hands the batch to its listeners, so a listener never sees an event the views lack yet.
`AssignmentWaiters` holds the agents' long polls: one asyncio event per node, set (from the tailer's thread,
through the event loop) when a batch may have changed that node's assignments.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import structlog

from domain.agent_protocol import Assignments
from projections.base import Batch, kind_of

log = structlog.get_logger("roving.wakeups")
Listener = Callable[[list[tuple[int, Any]]], None]
ALL = None  # wake every waiting node
NODE_CHANGES = frozenset({"Node.NodeRegistered", "Node.NodeRejoined"})  # a new agent epoch: its own answer changes
ALLOCATION_CHANGES = frozenset({"Allocation.Placed", "Allocation.Ended", "Allocation.RankExited"})  # a start, a stop to send


class LogSignals:
    """A follower target: the views apply the batch, then every listener hears it (a failing one is logged)."""

    def __init__(self, views: Any) -> None:
        self.views = views
        self.listeners: list[Listener] = []

    @classmethod
    def attach(cls, follower: Any) -> LogSignals:
        """Put signals between `follower` and its target (before the follower starts)."""
        signals = cls(follower.target)
        follower.target = signals
        return signals

    @property
    def position(self) -> int:
        return self.views.position

    def listen(self, listener: Listener) -> None:
        self.listeners.append(listener)

    def apply(self, batch: Batch) -> int:
        batch = list(batch)
        fresh = self.views.apply(batch)
        for listener in list(self.listeners):
            try:
                listener(batch)
            except Exception:  # noqa: BLE001 - a listener is a shortcut; the pollers' backstops still run
                log.exception("wakeups.listener_failed", position=batch[-1][0] if batch else None)
        return fresh


class AssignmentWaiters:
    """Long polls on `GET /v4/agent/assignments?wait=S`: wait until the node has a start or a stop, or S passes."""

    def __init__(self, views: Any) -> None:
        self.views = views
        self._events: dict[str, asyncio.Event] = {}  # touched on the loop only; read (atomically) by the tailer
        self._sent: dict[str, tuple[str, frozenset]] = {}  # node -> (ETag, orders) of the last answer it was given
        self._pushed: dict[str, frozenset] = {}  # node -> orders of the last answer pushed over the agent bus
        self._built: dict[str, Assignments] = {}  # node -> the last answer made for it on the tailer's thread
        self._loop: asyncio.AbstractEventLoop | None = None
        self.closing = False  # the server is stopping: every wait answers now, none starts to hold

    async def wait(self, node: Any, seconds: float, read: Callable[[], Awaitable[Assignments]],
                   news: Callable[[Assignments], bool] = lambda answer: bool(answer.start or answer.stop),
                   ) -> Assignments:
        """`read()` until its answer is `news` (by default: names work for `node`) or `seconds` pass. The event is
        taken before each read, so a batch applied between the read and the wait still wakes it."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # an event belongs to the loop that first waited on it
            self._events, self._loop = {}, loop
        deadline = loop.time() + seconds
        while True:
            event = self._events.setdefault(str(node), asyncio.Event())
            answer = await read()
            remaining = deadline - loop.time()
            if news(answer) or remaining <= 0 or self.closing:
                return answer
            try:
                await asyncio.wait_for(event.wait(), remaining)
            except TimeoutError:
                return await read()

    def built(self, node: Any, answer: Assignments) -> None:
        """An answer made for the node on the tailer's thread (the push publisher's, for the batch that woke the
        node's held poll), at the views' position it names."""
        self._built[str(node)] = answer

    def current(self, node: Any, position: int) -> Assignments | None:
        """The node's answer as `built` made it, if made at `position` (the views' now): a held poll woken by that
        batch reads it instead of making the same answer again on a worker thread."""
        found = self._built.get(str(node))
        return found if found is not None and found.position == position else None

    def answered(self, node: Any, tag: str, orders: frozenset) -> None:
        """The answer a node was just given: its next poll, naming this ETag, waits for orders beyond these."""
        self._sent[str(node)] = (tag, orders)

    def sent(self, node: Any, tag: str) -> frozenset | None:
        """The orders of the answer with this ETag, if it was this process's last answer to the node."""
        found = self._sent.get(str(node))
        return found[1] if found is not None and found[0] == tag else None

    def pushed(self, node: Any, tag: str, orders: frozenset) -> None:
        """An answer pushed over the agent bus (api/composition/agent_push.py), from the tailer's thread: a poll
        of an agent that hears the bus does not answer these orders again."""
        self._sent[str(node)] = (tag, orders)
        self._pushed[str(node)] = orders

    def pushed_orders(self, node: Any) -> frozenset:
        return self._pushed.get(str(node), frozenset())

    def forget_pushed(self, node: Any) -> None:
        """A push that failed: the node's held poll answers those orders after all."""
        self._pushed.pop(str(node), None)
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._wake, {str(node)})

    def close(self) -> None:
        """The server stops: held polls answer what they have at once (the agent asks again, of the next server),
        instead of holding the stop until uvicorn's graceful timeout cancels them with a 500."""
        self.closing = True
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._wake, ALL)

    def observe(self, batch: list[tuple[int, Any]]) -> None:
        """On the tailer's thread: wake the nodes whose assignments the batch may have changed."""
        loop = self._loop
        if not self._events or loop is None or loop.is_closed():
            return
        nodes = self.touched(event for _, event in batch)
        if nodes is ALL or nodes:
            loop.call_soon_threadsafe(self._wake, nodes)

    def touched(self, events: Iterable[Any]) -> set[str] | None:
        nodes: set[str] = set()
        for event in events:
            kind = kind_of(event)
            if kind == "Workflow.Canceled":
                return ALL  # its running work, wherever it is, is now to stop
            if kind in NODE_CHANGES:
                nodes.add(str(event.originator_id))
            elif kind in ALLOCATION_CHANGES:
                nodes.update(str(n) for n in getattr(event, "nodes", None) or self._nodes_of(event.originator_id))
        return nodes

    def _nodes_of(self, allocation_id: Any) -> list[str]:
        allocation = self.views.queue.allocation(allocation_id)
        return list(allocation.nodes) if allocation is not None else []

    def _wake(self, nodes: set[str] | None) -> None:
        for node in list(self._events) if nodes is ALL else nodes:
            event = self._events.pop(node, None)
            if event is not None:
                event.set()

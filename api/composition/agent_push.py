"""Work pushed to agents over NATS: when the log changes a node's assignments, the scheduler leader's process
publishes the node's new assignments answer, sealed with that node's key (adapters/agent_bus.py), on the node's
own subject, so its agent starts (or stops) work without an HTTP round trip.

The answer is the one the long poll gives (workflow tokens and secret values in it, hence the seal); the long poll
stays as the agent's catch-up and fallback, and a poll held for an agent that hears the bus does not answer with
what was pushed to it (AssignmentWaiters.pushed). Only the leader publishes, so API workers do not push one change
N times; a leader that loses its lease stops, and the new leader's process takes over. (Its placements are the
only ones, so what it publishes is what every worker records as pushed.)
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import msgspec
import structlog

from adapters.agent_bus import node_key, seal, starts_subject
from adapters.background import Background
from api.composition.wakeups import ALL, AssignmentWaiters
from api.http.routes.agent import orders, tagged
from api.http.workflow_tokens import WorkflowTokens, with_workflow_tokens
from domain.agent_protocol import Assignments, Pushed, Start

log = structlog.get_logger("roving.agent_push")
ENCODER = msgspec.json.Encoder()
PUBLISH_TIMEOUT = 5.0
# Bytes of an answer (its references, before tokens and secret values are added) that a push carries at most: NATS's
# max_payload is 1 MiB by default, and each start then gains a workflow token (~400 bytes) and its resolved secrets.
# Every worker decides it alike off its own views, so a larger answer is recorded as pushed by none: the long poll
# carries it at once, from whichever worker holds it (a failed publish un-records it on the leader's process only).
PUSH_MOST = 512 * 1024


class StartsPublisher:
    """A log listener (before the long polls' own) and one thread that seals and publishes."""

    def __init__(self, views: Any, key: bytes, connection: Any, cluster: str, waiters: AssignmentWaiters,
                 leading: Callable[[], bool], secrets: Any = None, token_ttl: timedelta = timedelta(days=7)) -> None:
        self.views, self.key, self.connection, self.cluster = views, key, connection, cluster
        self.waiters, self.leading, self.secrets, self.token_ttl = waiters, leading, secrets, token_ttl
        self._queue: queue.SimpleQueue[tuple[str, int, str, Assignments[Start]] | None] = queue.SimpleQueue()
        self._tokens = WorkflowTokens()  # a running stage's token is the same in every push for a while
        self._seq = 0
        self.background = Background(self._run, "roving-agent-push", join_seconds=PUBLISH_TIMEOUT + 1)

    def start(self) -> StartsPublisher:
        self.background.start()
        return self

    def stop(self) -> None:
        self._queue.put(None)  # the loop sleeps on its queue, not on `wake`
        self.background.stop()

    def observe(self, batch: list[tuple[int, Any]]) -> None:
        """On the tailer's thread, before the long polls wake: what is to be pushed is recorded as pushed now, so a
        held poll of an agent hearing the bus never answers it too; the sealing and publishing happen on the thread.
        Every API worker records (each tails the same log: a poll held by another worker than the leader's is not
        answered with what the leader pushes); only the leader's process publishes."""
        nodes = self.waiters.touched(event for _, event in batch)
        if nodes is ALL:
            nodes = {str(node.id) for node in self.views.nodes.nodes()}
        leading = self.leading()
        for node in nodes:
            self._consider(node, leading)

    def _consider(self, node: str, leading: bool) -> None:
        found = self.views.nodes.node(node)
        if found is None or getattr(found, "removed", False):
            return
        answer = self.views.answer(UUID(node))
        self.waiters.built(node, answer)  # the node's held poll, woken by the same batch, reads it
        news = orders(answer)
        if news <= self.waiters.pushed_orders(node):
            return  # nothing it has not been pushed: an allocation that ended, say
        body, tag = tagged(answer)  # without its position: every worker measures the same answer alike
        if len(body) > PUSH_MOST:
            log.debug("agent_push.too_large", node_id=node, bytes=len(body), starts=len(answer.start))
            return
        self.waiters.pushed(node, tag, news)
        if leading:
            self._queue.put((node, found.epoch, tag, answer))

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            node, epoch, tag, answer = item
            try:
                self._publish(node, epoch, tag, answer)
            except Exception as error:  # noqa: BLE001 - the long poll answers it instead, when it times out
                self.waiters.forget_pushed(node)
                log.warning("agent_push.failed", node_id=node, error=repr(error))

    def _publish(self, node: str, epoch: int, tag: str, answer: Assignments[Start]) -> None:
        full = with_workflow_tokens(answer, self.views, self.key, self.token_ttl, datetime.now(UTC), self._tokens)
        if self.secrets is not None:
            full = self.secrets.resolve_assignments(full)
        self._seq = max(self._seq + 1, time.time_ns())
        body = ENCODER.encode(Pushed(node_id=UUID(node), epoch=epoch, seq=self._seq, etag=tag,
                                     assignments=msgspec.Raw(ENCODER.encode(full))))
        subject = starts_subject(self.cluster, node)
        sealed = seal(node_key(self.key, node, epoch), epoch, subject, body)
        client = self.connection.client
        self.connection.loop.run(client.nc.publish(subject, sealed), timeout=PUBLISH_TIMEOUT)

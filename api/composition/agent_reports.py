"""Agents' reports over NATS: a request on `roving_agents.<cluster>.reports.<node>` carrying a batch of that node's
reports (`Reports`), sealed with the node's key at its current epoch (adapters/agent_bus.py), answered with each
report's result (`BatchResults`, sealed likewise) as `POST /v4/agent/reports:batch` answers it.

What is refused is answered `{"refused": why}` in clear and decides nothing: an envelope that does not open (another
node's key, a tampered or foreign message), an epoch that is not the node's current one, a batch naming another
node. The agent then sends the batch over HTTP, whose answer (a 409 for a stale epoch) is the protocol's. A
request replayed decides nothing new: reports are idempotent, and one of an earlier epoch does not open.
Every API worker answers (a queue group): deciding reports is any process's work.
An answer goes only to an agent's inbox (`_INBOX.`): the requester names the reply subject and NATS checks no
permission on it, while this connection may publish anywhere, so a request naming an event subject or the JetStream
API would have the control plane write there for any holder of the agent credentials. Such a request is dropped.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import msgspec
import structlog

from adapters.agent_bus import Unsealed, epoch_of, node_key, open_sealed, seal
from adapters.nats_auth import REPLIES
from api.http.routes.agent import MAX_REPORTS, decide_reports
from domain.agent_protocol import Reports

log = structlog.get_logger("roving.agent_reports")
ENCODER = msgspec.json.Encoder()
QUEUE = "roving-agent-reports"
INBOX = REPLIES.removesuffix(">")  # where agents hear answers (adapters/nats_auth.py): the only place answered


def answer_subject(subject: str) -> str:
    """What a reports answer is bound to (its associated data): the request's subject, as an answer."""
    return subject + ".answer"


class Refused(Exception):
    pass


class ReportsResponder:
    """Subscribed on the control plane's own NATS connection; each batch decided off its loop."""

    def __init__(self, roving: Any, views: Any, key: bytes, connection: Any, cluster: str) -> None:
        self.roving, self.views, self.key, self.connection = roving, views, key, connection
        self.subject = f"roving_agents.{cluster}.reports.*"
        self.subscription: Any = None

    def start(self) -> ReportsResponder:
        nc = self.connection.client.nc
        self.subscription = self.connection.loop.run(nc.subscribe(self.subject, queue=QUEUE, cb=self._request),
                                                     timeout=10)
        return self

    def stop(self) -> None:
        if self.subscription is not None:
            try:
                self.connection.loop.run(self.subscription.unsubscribe(), timeout=5)
            except Exception:  # noqa: BLE001 - the connection may have gone first
                pass
            self.subscription = None

    async def _request(self, message: Any) -> None:
        if not (message.reply or "").startswith(INBOX):
            log.warning("agent_reports.reply_refused", subject=message.subject, reply=message.reply[:200])
            return  # decided nothing: an agent's request always names its inbox
        try:
            answer = await asyncio.to_thread(self.answer, message.subject, message.data)
        except Refused as refusal:
            log.warning("agent_reports.refused", subject=message.subject, reason=str(refusal))
            answer = ENCODER.encode({"refused": str(refusal)})
        except Exception as error:  # noqa: BLE001 - a log outage: the agent keeps its reports and tries again
            log.warning("agent_reports.failed", subject=message.subject, error=repr(error))
            answer = ENCODER.encode({"refused": f"not decided: {error}"})
        await message.respond(answer)

    def answer(self, subject: str, data: bytes) -> bytes:
        """The sealed results of the batch `data` carries, or Refused saying why none is decided."""
        node = _node_of(subject)
        try:
            epoch = epoch_of(data)
            found = self.views.nodes.node(node)
            if found is None or found.epoch != epoch:
                raise Refused(f"epoch {epoch} is not node {node}'s current one")
            key = node_key(self.key, node, epoch)
            batch = msgspec.json.decode(open_sealed(key, subject, data), type=Reports)
        except (Unsealed, msgspec.DecodeError) as error:
            raise Refused(str(error)) from None
        if batch.node_id != node or any(r.node_id != node for r in batch.reports):
            raise Refused(f"every report must be of node {node}, whose key sealed it")
        if len(batch.reports) > MAX_REPORTS:
            raise Refused(f"at most {MAX_REPORTS} reports a request, not {len(batch.reports)}")
        results = decide_reports(self.roving, self.views, batch, datetime.now(UTC))
        return seal(key, epoch, answer_subject(subject), ENCODER.encode(results))


def _node_of(subject: str) -> UUID:
    try:
        return UUID(subject.rsplit(".", 1)[1])
    except ValueError:
        raise Refused(f"{subject} names no node") from None

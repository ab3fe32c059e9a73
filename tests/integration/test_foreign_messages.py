"""A message in the event stream that is no event (no `Roving-Topic`/`Roving-Version` headers) is passed over by
every reader. NATS lets any client that may make a JetStream request name any reply subject, and the server's own
answer (a stream's info, a publish's acknowledgement) then lands there: with the agent credentials every node holds,
such an answer can be put on any aggregate's subject. A restarted control plane must still build its views, and the
aggregate must still load and take new events."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from uuid import uuid4

import nats

from adapters.tailer import Tailer
from domain.app import Roving
from domain.ids import org_id
from projections.views import Views
from tests.unit.app.builders import ADMIN
from tests.unit.posix.test_posix_ids import FastHasher

T0 = datetime(2026, 12, 1, tzinfo=UTC)
ANSWER = b'{"type":"io.nats.jetstream.api.v1.pub_ack","stream":"LOGS_X","seq":7}'


def put(nats_url: str, subject: str) -> None:
    """As the server's answer lands where an agent's request named its reply: a message with no headers."""
    async def publish() -> None:
        nc = await nats.connect(nats_url)
        try:
            await nc.jetstream().publish(subject, ANSWER)
        finally:
            await nc.close()
    asyncio.run(publish())


def test_a_server_answer_on_a_nodes_subject_stops_neither_a_restart_nor_the_nodes_next_registration(nats_url):
    cluster = f"f{uuid4().hex[:8]}"
    env = {"PERSISTENCE_MODULE": "adapters.jetstream", "ROVING_NATS_URL": nats_url, "ROVING_CLUSTER": cluster}
    first = Roving(env=env, passwords=FastHasher())
    node, epoch = first.register_node("n1", 8, 8 << 30, {}, {}, "pool", "127.0.0.1", None, T0)
    put(nats_url, f"roving.{cluster}.node.{node}")
    put(nats_url, f"roving.{cluster}.workflow.{uuid4()}")
    first.close()
    again, views = Roving(env=env, passwords=FastHasher()), Views()
    tailer = Tailer(again, views)
    try:
        tailer.start()
        deadline = time.monotonic() + 20
        while not tailer.caught_up.is_set() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert tailer.caught_up.is_set(), "the restarted control plane never built its views"
        assert views.nodes.node(str(node)) is not None
        _, registered = again.register_node("n1", 8, 8 << 30, {}, {}, "pool", "127.0.0.1", None, T0)
        assert registered == epoch + 1
        # an organization's id follows from its name: one put on its subject before it exists
        put(nats_url, f"roving.{cluster}.organization.{org_id('acme')}")
        made = again.create_organization("acme", ADMIN, T0)
        assert made == org_id("acme") and again.repository.get(made).name == "acme"
    finally:
        tailer.stop()
        again.close()

"""Reads the whole cluster stream (ROVING_<CLUSTER>) straight from nats-server and decodes each event."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import nats
from nats.js.api import DeliverPolicy

from adapters.jetstream.subjects import StreamNames
from adapters.nats_tls import connect_options
from adapters.transcoder import MsgspecTranscoder


@dataclass(frozen=True)
class Event:
    seq: int
    kind: str           # aggregate kind from the subject: workflow, allocation, node, ...
    aggregate: str      # aggregate id from the subject
    version: int
    name: str           # event class name, e.g. Placed, AllocationReleased
    state: dict[str, Any]

    @property
    def at(self) -> Any:
        return self.state.get("at") or self.state.get("timestamp")


def read_log(nats_url: str, cluster: str = "local", idle: float = 3.0, limit: float = 120.0) -> list[Event]:
    """Every event of the cluster's stream in order; bounded by `limit` seconds in all."""
    return asyncio.run(asyncio.wait_for(_read(nats_url, cluster, idle), limit))


async def _read(nats_url: str, cluster: str, idle: float) -> list[Event]:
    names, decode = StreamNames(cluster), MsgspecTranscoder().decode
    nc = await nats.connect(**connect_options(nats_url), connect_timeout=5, max_reconnect_attempts=3)
    events: list[Event] = []
    try:
        js = nc.jetstream()
        last = (await js.stream_info(names.events)).state.last_seq
        if last == 0:
            return events
        sub = await js.subscribe(f"{names.prefix('events')}.>", stream=names.events, ordered_consumer=True,
                                 deliver_policy=DeliverPolicy.ALL)
        while True:
            msg = await sub.next_msg(timeout=idle)
            parts = msg.subject.split(".", 3)
            topic = (msg.headers or {}).get("Roving-Topic", "")
            version = int((msg.headers or {}).get("Roving-Version", "0"))
            state = decode(msg.data) if msg.data else {}
            events.append(Event(seq=msg.metadata.sequence.stream, kind=parts[2], aggregate=unquote(parts[3]),
                                version=version, name=topic.rpartition(".")[2], state=state if isinstance(state, dict) else {}))
            if msg.metadata.sequence.stream >= last or msg.metadata.num_pending == 0:
                break
        await sub.unsubscribe()
    finally:
        await nc.close()
    return events

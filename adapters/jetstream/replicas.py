"""Every stream Roving makes (the event log's, a KV bucket's `KV_<bucket>`, an object store's `OBJ_<bucket>`) held at
the configured replica count: made with it, and moved to it when an existing stream has another.

A stack started again with ROVING_NATS_REPLICAS=3 on a layout an R1 stack made (one server, then a cluster of three)
brings each stream it opens to three replicas by a stream config update, which a clustered server carries out
online: the leader copies the stream to the new peers while it keeps serving. Counts only go up here: a process
started without the setting (a tool, an old worker) must not shrink a replicated layout; going back to fewer is an
operator's step (`nats stream edit <stream> --replicas 1`)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import structlog

log = structlog.get_logger("roving.jetstream")
SETTLE_SECONDS = 10.0  # how long a start waits for a moved stream's new replicas to catch up before it goes on


async def hold_replicas(js: Any, stream: str, replicas: int) -> bool:
    """Move `stream` up to `replicas` if it has fewer; True when it was moved. The server refuses a count it cannot
    place (more replicas than servers) with an error naming it, which the caller's start fails on."""
    info = await js.stream_info(stream)
    config = info.config
    if (config.num_replicas or 1) >= replicas:
        return False
    before = config.num_replicas or 1
    config.num_replicas = replicas
    await js.update_stream(config)
    began = time.monotonic()
    settled = await _settled(js, stream, replicas, began + SETTLE_SECONDS)
    log.info("jetstream.replicas_moved", stream=stream, before=before, after=replicas, settled=settled,
             seconds=round(time.monotonic() - began, 2))
    return True


async def _settled(js: Any, stream: str, replicas: int, deadline: float) -> bool:
    """The moved stream has a leader and every new replica is current: until then its first reads and writes time
    out (a put right after the move did, 5 s, in tests/integration/test_replicated_layout.py)."""
    while time.monotonic() < deadline:
        try:
            cluster = (await js.stream_info(stream)).cluster
        except Exception:  # noqa: BLE001 - no leader yet answers with a timeout or "unavailable": ask again
            cluster = None
        peers = (cluster.replicas or []) if cluster is not None else []
        if cluster is not None and cluster.leader and len(peers) == replicas - 1 and all(p.current for p in peers):
            return True
        await asyncio.sleep(0.1)
    return False

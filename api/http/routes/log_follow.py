"""A stage's output live: `GET /v4/workflows/{id}/log/{stage}?follow=true` (`roving run` reads it).

The answer streams what the stage wrote, from its start, as it writes it, with stdout and stderr kept apart, and
ends when the stage's log ends (its agent marks the end when the process exits) or, for a stage that never
wrote one (canceled before it ran), a few seconds after its workflow ended. Each chunk is framed as Docker's
attach stream is: one byte for the stream (1 stdout, 2 stderr), three zero bytes, the length as four big-endian
bytes, then the bytes themselves. A quiet stage's stream carries an empty stdout frame every 15 s, so proxies in
between do not take it for dead.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import StreamingResponse

from api.http.errors import BadRequest
from api.http.routes import common as c
from domain.app.errors import NotFound

MEDIA_TYPE = "application/vnd.roving.stream"
STREAMS = {"stdout": 1, "stderr": 2}
ENDED = frozenset({"FINISHED", "FAILED", "CANCELED"})
TICK = 1.0  # how often a quiet stream looks whether its workflow has ended
PING = 15.0  # an empty frame after this much quiet: proxies (nginx's proxy_read_timeout) keep a quiet job's stream
GRACE = 1.5  # after the workflow ended, how long output (and the log's end) may still arrive (agents send every 0.2 s)


def frame(stream: str, chunk: bytes) -> bytes:
    return bytes([STREAMS.get(stream, 1), 0, 0, 0]) + len(chunk).to_bytes(4, "big") + chunk


async def followed(request: Request, found: Any, stage: str) -> StreamingResponse:
    if found.fan is not None:
        raise BadRequest("follow", f"live output is read on the workflow's own cluster ({found.cluster}); "
                                   "read it whole without follow")
    logs = c.services(request).logs
    if logs is None:
        raise NotFound("live logs (this control plane has no log stream)")
    workflow_id = str(found.detail.id)
    views = c.services(request).views
    return StreamingResponse(frames(logs.follow(workflow_id, stage), lambda: _ended(views, workflow_id)),
                             media_type=MEDIA_TYPE)


def _ended(views: Any, workflow_id: str) -> bool:
    workflow = views.workflows.workflow(workflow_id)
    return workflow is None or workflow.status in ENDED


async def frames(source: AsyncIterator[tuple[str, bytes]], ended: Any) -> AsyncIterator[bytes]:
    """Each chunk framed, until `source` ends or `ended()` has held for GRACE seconds."""
    pending: asyncio.Future = asyncio.ensure_future(anext(source))
    ended_at: float | None = None
    sent = time.monotonic()
    try:
        while True:
            done, _ = await asyncio.wait({pending}, timeout=TICK)
            if pending in done:
                try:
                    stream, chunk = pending.result()
                except StopAsyncIteration:
                    return
                yield frame(stream, chunk)
                sent = time.monotonic()
                pending = asyncio.ensure_future(anext(source))
                continue
            if time.monotonic() - sent > PING:
                yield frame("stdout", b"")
                sent = time.monotonic()
            if ended_at is None and ended():
                ended_at = time.monotonic()
            if ended_at is not None and time.monotonic() - ended_at > GRACE:
                return
    finally:
        pending.cancel()
        await asyncio.gather(pending, return_exceptions=True)  # its cancellation has reached the source
        closing = getattr(source, "aclose", None)
        if closing is not None:
            await asyncio.gather(closing(), return_exceptions=True)

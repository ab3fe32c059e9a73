"""How an agent asks for its assignments: a long poll the server may hold until there is news for the node.

`GET /v4/agent/assignments?node_id=..&wait=S` with the last answer's ETag as If-None-Match: a server that
long-polls holds the request until the answer differs (or S seconds pass), so new work starts at once and an
idle node costs one request per S seconds. The agent asks again at once after news, and after an answer the
server held; an answer that came back early and unchanged is an older server that ignores `wait` (it always
lists the running allocations), so the agent then waits its poll interval, as it does after an error.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import msgspec
import structlog

from api.agent.starts import Refused, decode_assignments
from domain.agent_protocol import Assignments, Start

log = structlog.get_logger("roving.agent")
Call = Callable[..., Awaitable[httpx.Response | None]]
HTTP_MARGIN = 10.0  # the request's timeout beyond the wait: a held answer is not a timeout
HELD = 0.9  # an answer after this share of the wait was held by the server


class AssignmentFeed:
    """One poll at a time: the answer, and whether to ask again at once."""

    def __init__(self, call: Call, wait: float) -> None:
        self.call, self.wait = call, wait
        self.etag: str | None = None
        self.last: Assignments[Start] | None = None  # the last answer applied, without its position
        self.newest = 0  # the log position of the newest answer applied, poll's or push's (0: none said one)
        self.refused: list[Refused] = []  # run specs of the last answer that did not decode (api/agent/starts.py)
        self.hears: Callable[[], bool] = lambda: False  # pushes reach the agent (api/agent/bus.py): polls say so

    def take(self, answer: Assignments[Start], tag: str | None) -> bool:
        """Whether to apply `answer` (a poll's or a push's): not if it was built from an older view of the log than
        the newest applied (a push nats-py held through an outage, flushed after the catch-up poll answered; a
        worker further behind than the last one asked), which would start work already stopped. An answer
        without a position (an older control plane) is taken as before. A taken one is the next poll's base."""
        if answer.position and answer.position < self.newest:
            log.info("agent.assignments_overtaken", position=answer.position, newest=self.newest)
            return False
        self.newest = max(self.newest, answer.position)
        self.last, self.etag = _unplaced(answer), tag
        return True

    def missed(self) -> None:
        """Pushes may have been lost: the next poll answers what there is at once (only newer than applied)."""
        self.etag = self.last = None

    def forget(self) -> None:
        """A new registration: whatever the last answer was, the next one is news, at whatever position (a log
        replaced under a running agent starts its positions again, and its node registers anew)."""
        self.missed()
        self.newest = 0

    async def fetch(self, node_id: str | None) -> tuple[Assignments[Start] | None, str | None, bool]:
        """The answer (None: none, or unreadable), its ETag, and whether to ask again at once. Applied or not is
        decided when it is applied (`take`): a push may be applied while the poll is out."""
        params: dict[str, Any] = {"node_id": node_id}
        headers = {}
        if self.wait > 0:
            params["wait"] = f"{self.wait:g}"
            if self.etag:
                headers["If-None-Match"] = self.etag
            if self.hears():
                params["bus"] = "1"
        began = time.monotonic()
        response = await self.call("GET", "/v4/agent/assignments", params=params, headers=headers,
                                   timeout=self.wait + HTTP_MARGIN)
        if response is None or response.status_code != 200:
            return None, None, False
        try:
            answer, self.refused = decode_assignments(response.content)
        except msgspec.DecodeError as error:  # nothing of it is applied: asked again after the poll interval
            log.warning("agent.assignments_unreadable", error=str(error), body=response.text[:300])
            return None, None, False
        news = _unplaced(answer) != self.last
        held = self.wait > 0 and time.monotonic() - began >= self.wait * HELD
        return answer, response.headers.get("etag"), news or held


def _unplaced(answer: Assignments[Start]) -> Assignments[Start]:
    """The answer without its log position: equal answers from workers at different positions are no news."""
    return msgspec.structs.replace(answer, position=0)


async def follow(feed: AssignmentFeed, node: Callable[[], str | None],
                 apply: Callable[[Assignments[Start]], Awaitable[None]],
                 tick: Callable[[], Awaitable[None]], stop: asyncio.Event, wake: asyncio.Event, interval: float) -> None:
    """Poll in a task of its own while `tick` (exits drained, reports flushed) runs here: a held poll delays
    neither. Answers are applied here too, so a start and an exit never interleave."""
    fetch: asyncio.Task | None = None
    not_before = 0.0
    try:
        while not stop.is_set():
            if fetch is None and time.monotonic() >= not_before:
                fetch = asyncio.create_task(feed.fetch(node()))
            await _idle(stop, wake, fetch, interval)
            try:
                if fetch is not None and fetch.done():
                    answer, tag, again = fetch.result()
                    fetch = None
                    if answer is not None and feed.take(answer, tag):
                        await apply(answer)
                    elif answer is not None:  # overtaken: a worker behind the log is asked again, not spun on
                        again = False
                    not_before = 0.0 if again else time.monotonic() + interval
                await tick()
            except Exception:  # noqa: BLE001 - whatever the API or the log said, the jobs run on: next round tries again
                log.exception("agent.round_failed", retry_in_s=interval)
                not_before = time.monotonic() + interval
                if fetch is not None and fetch.done():  # its error was the one: a poll still held runs on
                    fetch = None
    finally:
        if fetch is not None:
            fetch.cancel()
            await asyncio.gather(fetch, return_exceptions=True)


async def _idle(stop: asyncio.Event, wake: asyncio.Event, fetch: asyncio.Task | None, interval: float) -> None:
    """Until the poll answers, a job ends or starts being ready, the agent stops, or a poll interval passes. A wake
    that came while the last answer was applied is not lost: it returns at once (clearing it first made an exit
    that came then wait for the next poll answer or interval: up to half a second)."""
    if wake.is_set():
        wake.clear()
        return
    wake.clear()
    waiters = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(wake.wait())]
    await asyncio.wait([*waiters, *([fetch] if fetch is not None else [])], timeout=interval,
                       return_when=asyncio.FIRST_COMPLETED)
    for waiter in waiters:
        waiter.cancel()
    await asyncio.gather(*waiters, return_exceptions=True)

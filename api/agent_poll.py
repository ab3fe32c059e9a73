"""How an agent asks for its assignments: a long poll the server may hold until there is news for the node.

`GET /v4/agent/assignments?node_id=..&wait=S` with the last answer's ETag as If-None-Match: a server that
long-polls holds the request until the answer differs (or S seconds pass), so new work starts at once and an
idle node costs one request per S seconds. The agent asks again at once after news, and after an answer the
server held; an answer that came back early and unchanged is an older server that ignores `wait` (it always
lists the running allocations), so the agent then waits its poll interval, as it does after an error.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

Call = Callable[..., Awaitable[httpx.Response | None]]
HTTP_MARGIN = 10.0  # the request's timeout beyond the wait: a held answer is not a timeout
HELD = 0.9  # an answer after this share of the wait was held by the server


class AssignmentFeed:
    """One poll at a time: the answer, and whether to ask again at once."""

    def __init__(self, call: Call, wait: float) -> None:
        self.call, self.wait = call, wait
        self.etag: str | None = None
        self.last: dict[str, Any] | None = None

    def forget(self) -> None:
        """A new registration: whatever the last answer was, the next one is news."""
        self.etag = self.last = None

    async def fetch(self, node_id: str) -> tuple[dict[str, Any] | None, bool]:
        params: dict[str, Any] = {"node_id": node_id}
        headers = {}
        if self.wait > 0:
            params["wait"] = f"{self.wait:g}"
            if self.etag:
                headers["If-None-Match"] = self.etag
        began = time.monotonic()
        response = await self.call("GET", "/v4/agent/assignments", params=params, headers=headers,
                                   timeout=self.wait + HTTP_MARGIN)
        if response is None or response.status_code != 200:
            return None, False
        answer = response.json()
        news = answer != self.last
        self.last, self.etag = answer, response.headers.get("etag")
        held = self.wait > 0 and time.monotonic() - began >= self.wait * HELD
        return answer, news or held

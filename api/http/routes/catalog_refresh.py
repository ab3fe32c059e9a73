"""`POST /v4/catalog/sources/{id}:refresh`: a catalog source read anew now, rather than at its refresh time (a git
source is fetched), by its managers. Asked with `Accept: application/x-ndjson`, the answer streams git's
progress as it fetches, one JSON object a line (`{"progress": "Receiving objects:  45% (9/20), 1.2 MiB | 600 KiB/s"}`),
then the answer itself as the last line (or `{"refused": "why"}`), so `roving catalog source refresh|add` can
show bytes and rate."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any
from uuid import UUID

import msgspec
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from api.http.answers import CatalogSourceRefreshed, Problem, answers
from api.http.routes import common as c
from api.http.routes.catalog import catalog

NDJSON = "application/x-ndjson"


def answer_of(found: dict[str, Any]) -> CatalogSourceRefreshed:
    return CatalogSourceRefreshed(id=str(found["id"]), name=found["name"], scope=found["scope"], owner=found["owner"],
                                  templates=found["templates"], error=found["error"],
                                  problems=[Problem(path=p["path"], message=p["message"]) for p in found["problems"]])


@answers(CatalogSourceRefreshed)
async def refresh(request: Request) -> Response:
    source, who, handlers = c.uuid_param(request, "id", "catalog source"), c.principal(request), catalog(request)
    if NDJSON not in request.headers.get("accept", ""):
        return c.json(answer_of(await c.call(handlers.refresh_source, source, who)))
    await c.call(handlers.refreshable, source, who)  # a refusal answers 404 or 403 before any line streams
    return StreamingResponse(told(handlers.refresh_source, source, who), media_type=NDJSON,
                             headers={"Cache-Control": "no-store"})


async def told(refresh_source: Any, source: UUID, who: Any) -> AsyncIterator[bytes]:
    """git's progress lines as they come, then the answer (or, past the first line, the refusal) as the last."""
    loop, lines = asyncio.get_running_loop(), asyncio.Queue[str]()
    work = asyncio.ensure_future(c.call(refresh_source, source, who,
                                        lambda line: loop.call_soon_threadsafe(lines.put_nowait, line)))
    while not work.done() or not lines.empty():
        waiting = asyncio.ensure_future(lines.get())
        await asyncio.wait({work, waiting}, return_when=asyncio.FIRST_COMPLETED)
        if waiting.done():
            yield msgspec.json.encode({"progress": waiting.result()}) + b"\n"
        else:
            waiting.cancel()
    try:
        yield msgspec.json.encode(answer_of(work.result())) + b"\n"
    except Exception as error:  # noqa: BLE001 - the status line went out with the first line: the refusal is the last
        yield msgspec.json.encode({"refused": str(error) or type(error).__name__}) + b"\n"


routes = [Route("/v4/catalog/sources/{id}:refresh", refresh, methods=["POST"])]

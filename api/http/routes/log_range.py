"""A stage's log read by byte offset: `GET /v4/workflows/{id}/log/{stage}?offset=N&limit=M` answers those bytes
exactly as written (never re-decoded, so a reader's offsets add up) with `Roving-Log-Total`, how many bytes the log
holds so far, and `Roving-Log-Offset`, where the answer starts. A follower asks again from what it has; a reader of
a long log asks for its last part first (`offset=-N`: the last N bytes). Without either parameter the answer is the
whole log, as always."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from adapters.logs import start_of
from api.http.errors import BadRequest
from api.http.routes import common as c

TOTAL = "Roving-Log-Total"
OFFSET = "Roving-Log-Offset"
MEDIA_TYPE = "text/plain; charset=utf-8"


def window(request: Request) -> tuple[int, int | None] | None:
    """(offset, limit) asked for; None when the request asks for neither (the whole log)."""
    offset, limit = c.query_int(request, "offset"), _bytes(request, "limit")
    if offset is None and limit is None:
        return None
    return offset or 0, limit


def _bytes(request: Request, name: str) -> int | None:
    value = c.query_int(request, name)
    if value is not None and value < 0:
        raise BadRequest(name, f"expected a number of bytes, 0 or more, got {value}")
    return value


def sliced(whole: bytes, offset: int, limit: int | None) -> tuple[bytes, int]:
    """A window of a log read whole (a member cluster's, through the hub)."""
    start = start_of(offset, len(whole))
    return whole[start:None if limit is None else start + limit], len(whole)


def ranged(data: bytes, total: int, offset: int, headers: dict[str, str] | None = None) -> Response:
    """The window asked for at `offset`, saying where it starts and how long the whole log is."""
    start = str(start_of(offset, total))
    return Response(data, media_type=MEDIA_TYPE, headers={TOTAL: str(total), OFFSET: start, **(headers or {})})

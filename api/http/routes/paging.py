"""The `limit`, `next` and `q` query parameters of a paged list (nodes, events, audit rows, objects).

Every list pages with the workflow list's cursor (projections.workflow_pages): `next` is the last row's key, so a
row added while a client pages neither shifts nor repeats the rest. A bad value is a 400 naming the parameter.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from api.http.errors import BadRequest
from api.http.routes import common as c
from projections import workflow_pages as pages

PARAMS = ("limit", "next")


def limit(request: Request, most: int = pages.MAX_LIMIT) -> int | None:
    """`?limit=`: 1 to `most` (None when not asked)."""
    asked = c.query_int(request, "limit")
    if asked is not None and not 1 <= asked <= most:
        raise BadRequest("limit", f"expected a whole number from 1 to {most}, got {asked}")
    return asked


def after(request: Request, list_name: str, types: list[type]) -> list[Any] | None:
    """`?next=`: the key a previous page of this list ended at (None on a first page)."""
    cursor = request.query_params.get("next") or None
    if cursor is None:
        return None
    try:
        return pages.decode(list_name, cursor, types)
    except pages.BadCursor as error:
        raise BadRequest("next", str(error)) from None


def search(request: Request) -> str | None:
    """`?q=`: part of a name, compared without case (None when not asked)."""
    q = request.query_params.get("q") or None
    if q is not None and len(q) > pages.MAX_Q:
        raise BadRequest("q", f"expected at most {pages.MAX_Q} characters, got {len(q)}")
    return q.lower() if q is not None else None

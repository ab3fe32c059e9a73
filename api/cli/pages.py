"""The pages of a list the API pages (nodes, events, audit rows, objects), following each answer's `next` cursor."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from api.cli.client import Client

PAGE = 1_000  # rows asked for a request: a long list comes in several bodies, none of them huge


def answers(client: Client, path: str, page: int | None = None, **params: Any) -> Iterator[dict[str, Any]]:
    """Each page's answer in turn (at most `page` rows each, default PAGE), from the first to the one without
    `next` (a server that does not page answers one page without it)."""
    cursor = None
    while True:
        answer = client.get(path, limit=PAGE if page is None else page, next=cursor, **params)
        yield answer
        cursor = answer.get("next")
        if not cursor:
            return


def rows(client: Client, path: str, key: str, page: int | None = None, **params: Any) -> list[dict[str, Any]]:
    """Every row of the list, each once."""
    return [row for answer in answers(client, path, page, **params) for row in answer[key]]

"""Pages of the workflow list: one order's sort key, the filters a list takes, and the opaque cursor between pages.

The cursor is the one every paged list uses (nodes, events, audit rows and objects page with `after_key`): a
list names itself in place of an order, so a cursor from one list is refused by another.

A cursor is the last row's full sort key (the order's key, then the id), so the next page starts strictly after
it: a workflow submitted while a client pages does not shift or repeat the rows it has yet to read. Hot rows
(the views) and cold rows (the audit store) are merged under the same key, so a page may hold both.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

import msgspec

DEFAULT_LIMIT = 1_000  # a list asked without `limit` (a single body never holds every workflow)
MAX_LIMIT = 10_000
MAX_Q = 256


def _ts(row: Any) -> float:
    submitted: datetime = row.submitted_at
    return submitted.timestamp()


# order -> (its key, newest/highest first); every key is JSON, so it travels in a cursor as it is
KEYS: dict[str, tuple[Callable[[Any], list[Any]], bool]] = {
    "-submitted": (lambda r: [_ts(r)], True),
    "submitted": (lambda r: [_ts(r)], False),
    "priority": (lambda r: [r.effective_inputs, -_ts(r)], True),
    "name": (lambda r: [r.name], False),
}


KEY_TYPES: dict[str, list[type]] = {"-submitted": [float], "submitted": [float], "priority": [int, float], "name": [str]}


class BadCursor(ValueError):
    """A `next` this list did not make (or made for another order)."""


class ListQuery(msgspec.Struct, frozen=True, kw_only=True):
    """What a caller asked of the list; `owner` and visibility are the caller's predicates (names need a request)."""

    status: str | None = None
    order_by: str = "-submitted"
    limit: int = DEFAULT_LIMIT
    after: list[Any] | None = None  # a decoded cursor: the full key of the last row already sent
    q: str | None = None
    since: datetime | None = None
    until: datetime | None = None


def full_key(order_by: str, row: Any) -> list[Any]:
    return [*KEYS[order_by][0](row), str(row.id)]


def matches(query: ListQuery, row: Any) -> bool:
    """The row passes the query's own filters (status, name search, submission window)."""
    if query.status is not None and row.status != query.status.upper():
        return False
    if query.q and query.q.lower() not in row.name.lower() and not str(row.id).startswith(query.q.lower()):
        return False
    if query.since is not None and row.submitted_at < query.since:
        return False
    return query.until is None or row.submitted_at < query.until


def past_cursor(query: ListQuery, row: Any) -> bool:
    """The row comes after the cursor in the query's order (every row does on a first page)."""
    if query.after is None:
        return True
    key, newest_first = full_key(query.order_by, row), KEYS[query.order_by][1]
    return key < query.after if newest_first else key > query.after


def page(rows: Iterable[Any], query: ListQuery) -> tuple[list[Any], str | None]:
    """The first `limit` rows in the query's order past its cursor, and the cursor to the next page (None: last)."""
    newest_first = KEYS[query.order_by][1]
    chosen = sorted(rows, key=lambda r: full_key(query.order_by, r), reverse=newest_first)
    if len(chosen) <= query.limit:
        return chosen, None
    shown = chosen[:query.limit]
    return shown, encode(query.order_by, full_key(query.order_by, shown[-1]))


def encode(order_by: str, key: list[Any]) -> str:
    raw = msgspec.json.encode([order_by, *key])
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(order_by: str, cursor: str, types: list[type] | None = None) -> list[Any]:
    """The full key a cursor holds; BadCursor when it is not one of ours, or was made for another order (or list).
    `types` are the key's types (default: the workflow order's key, then the id)."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        made_for, *key = msgspec.json.decode(raw, type=list)
    except (binascii.Error, ValueError, msgspec.DecodeError):
        raise BadCursor("not a cursor this list answered (pass the `next` of the previous page as it is)") from None
    if made_for != order_by:
        raise BadCursor(f"the cursor was made for order_by={made_for}, not {order_by}")
    if [type(k) for k in key] != ([*KEY_TYPES[order_by], str] if types is None else types):
        raise BadCursor("not a cursor this list answered (pass the `next` of the previous page as it is)")
    return key


def after_key(rows: Iterable[Any], key: Callable[[Any], list[Any]], list_name: str, limit: int | None,
              after: list[Any] | None) -> tuple[list[Any], str | None]:
    """Rows (in ascending `key` order) past the cursor's key, at most `limit` of them (None: all), and the cursor
    to the next page (None: the last)."""
    past = [r for r in rows if after is None or key(r) > after]
    if limit is None or len(past) <= limit:
        return past, None
    return past[:limit], encode(list_name, key(past[limit - 1]))

"""Short workflow ids: the UI and `workflow list` show 8 characters, so every command that takes a workflow id
takes a prefix of one, when exactly one workflow the caller can see starts with it.

Resolved here, against the caller's own list: a prefix never reaches the server, and ambiguity is counted only
among workflows the caller may see (another tenant's ids neither match nor show)."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Iterator
from typing import Any
from uuid import UUID

from api.cli.client import Client

Handler = Callable[[argparse.Namespace, Client], Any]
PREFIX = re.compile(r"[0-9a-f][0-9a-f-]{3,35}")  # 4 characters at least: fewer would match half of a list
SHOWN = 3  # ids named in an ambiguity message


class ShortIdError(Exception):
    """A prefix that names no workflow, or several: bad usage (exit 2), with what to type instead."""


def visible_workflows(client: Client) -> Iterator[dict[str, Any]]:
    """Every workflow the caller can see, following the list's `next` cursor where the server pages it."""
    cursor = None
    while True:
        answer = client.get("/v4/workflows", next=cursor) if cursor else client.get("/v4/workflows")
        yield from answer["workflows"]
        cursor = answer.get("next")
        if not cursor:
            return


def workflow_id(client: Client, text: str) -> str:
    """The full id `text` stands for: itself when it is a whole id, else the one visible id it begins."""
    wanted = text.strip().lower()
    try:
        return str(UUID(wanted))
    except ValueError:
        pass
    if not PREFIX.fullmatch(wanted):
        raise ShortIdError(f"id: {text!r} is not a workflow id or the start of one (4 or more hex characters)")
    found = [w["id"] for w in visible_workflows(client) if w["id"].startswith(wanted)]
    if not found:
        raise ShortIdError(f"id: no workflow you can see has an id starting with {wanted!r}")
    if len(found) > 1:
        some = ", ".join(found[:SHOWN]) + (", ..." if len(found) > SHOWN else "")
        raise ShortIdError(f"id: {wanted!r} starts {len(found)} workflow ids ({some}); give more characters")
    return found[0]


def resolving(handler: Handler) -> Handler:
    """`handler` with `args.id` made whole first."""
    def run(args: argparse.Namespace, client: Client) -> Any:
        try:
            args.id = workflow_id(client, args.id)
        except ShortIdError as error:
            print(f"roving: {error}", file=sys.stderr)
            return 2
        return handler(args, client)

    run.__name__ = handler.__name__
    return run

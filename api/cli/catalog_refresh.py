"""`roving catalog source refresh NAME`: a source read anew now (a git source fetched) rather than at its refresh
time; on a terminal with git's progress as it fetches (step, percent, bytes, rate, ETA), redrawn in place. Also
what `source add` of a git repository does on a terminal, so its first clone shows rather than stalling a listing."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import httpx

from api.cli.client import ApiError, Client, unreachable
from api.cli.progress import fetched, for_people

NDJSON = "application/x-ndjson"


def find_source(args: argparse.Namespace, client: Client) -> dict[str, Any]:
    """The one source named (by name or id, narrowed by --scope and --owner) the caller can see."""
    sources = client.get("/v4/catalog/sources")["sources"]
    found = [s for s in sources if args.source in (s["id"], s["name"])
             and (not args.scope or s["scope"] == args.scope) and (not args.owner or args.owner in (s["owner"], s["owner_id"]))]
    if len(found) != 1:
        raise ApiError(f"no catalog source {args.source!r} you can see" if not found else
                       f"{len(found)} sources are named {args.source!r}; say which with --scope/--owner or its id")
    return found[0]


def refresh(args: argparse.Namespace, client: Client) -> Any:
    source = find_source(args, client)
    answer = refreshed(client, source, for_people(args))
    if answer["error"]:
        print(f"roving: catalog source {source['name']} could not be read: {answer['error']}", file=sys.stderr)
        return 1
    return answer if args.output != "table" else {k: answer[k] for k in ("name", "scope", "owner", "templates")}


def refreshed(client: Client, source: dict[str, Any], shown: bool) -> dict[str, Any]:
    """The server's answer to reading `source` anew; `shown`: git's progress drawn on standard error meanwhile."""
    path = f"/v4/catalog/sources/{source['id']}:refresh"
    if not shown:
        return dict(client.post(path))
    try:
        with client.http.stream("POST", path, headers={"Accept": NDJSON}, timeout=None) as response:
            if response.status_code >= 400:
                response.read()
                raise ApiError(client.refusal(response))
            return drawn(response.iter_lines(), f"refreshing {source['name']}")
    except httpx.HTTPError as error:
        raise ApiError(unreachable(client.http.base_url, error)) from None


def drawn(lines: Any, label: str) -> dict[str, Any]:
    """Each progress line redrawn in place, the line cleared at the end; the last line is the answer."""
    step, since, last = "", time.monotonic(), {}
    for line in lines:
        if not line.strip():
            continue
        last = json.loads(line)
        if "progress" not in last:
            continue
        now = last["progress"].split(":")[0]
        if now != step:  # each of git's steps runs from 0 to 100%: its ETA from its own start
            step, since = now, time.monotonic()
        sys.stderr.write("\r\x1b[K" + fetched(label, last["progress"], time.monotonic() - since))
        sys.stderr.flush()
    sys.stderr.write("\r\x1b[K")
    sys.stderr.flush()
    if "refused" in last:
        raise ApiError(last["refused"])
    return last


def register(sources: Any, common: argparse.ArgumentParser) -> None:
    p = sources.add_parser("refresh", parents=[common], help="read a source anew now (fetch a git repository)",
                           description=__doc__)
    p.add_argument("source", metavar="NAME", help="the source's name or id")
    p.add_argument("--scope", choices=["group", "organization", "cluster"], help="when several sources share NAME")
    p.add_argument("--owner", help="when several sources share NAME: their owner's name or id")
    p.set_defaults(handler=refresh)

"""`roving audit ...`: list audit rows by filter, run a read-only SQL query, export rows to Parquet, and show the
event stream's retention (what was archived)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import httpx

from api.cli import pages
from api.cli.client import ApiError, Client, message_of, unreachable
from api.cli.tenancy import org_ref

COLUMNS = ["position", "time", "event_type", "principal", "aggregate_kind", "aggregate_id", "workflow", "node",
           "organization"]
FILTERS = {"since": "since", "until": "until", "principal": "principal", "type": "event_type", "node": "node",
           "workflow": "workflow", "organization": "organization"}


def filters(args: argparse.Namespace) -> dict[str, Any]:
    return {param: getattr(args, option) for option, param in FILTERS.items() if getattr(args, option) is not None}


def list_rows(args: argparse.Namespace, client: Client) -> Any:
    """At most --limit rows, in pages of at most pages.PAGE, following each page's `next`."""
    found: list[dict[str, Any]] = []
    order = "newest" if args.newest else None
    for answer in pages.answers(client, "/v4/audit", min(args.limit, pages.PAGE), after=args.after, order=order,
                                  **filters(args)):
        found += answer["rows"]
        if len(found) >= args.limit:
            break
    return found[:args.limit]


def query(args: argparse.Namespace, client: Client) -> Any:
    answer = client.post("/v4/audit/query", {"sql": args.sql})
    if args.output != "table":
        return answer
    if answer["truncated"]:
        print(f"roving: showing the first {len(answer['rows'])} rows; the answer was cut there", file=sys.stderr)
    args.columns = answer["columns"]
    return [dict(zip(answer["columns"], row, strict=False)) for row in answer["rows"]]


def export(args: argparse.Namespace, client: Client) -> Any:
    """Every row the filters select (no page limit), written to the --parquet file."""
    try:
        response = client.http.get("/v4/audit/export.parquet", params=filters(args))
    except httpx.HTTPError as error:
        raise ApiError(unreachable(client.http.base_url, error)) from None
    if response.status_code >= 400:
        raise ApiError(f"{message_of(response)} (HTTP {response.status_code})")
    target = Path(args.parquet)
    target.write_bytes(response.content)
    return {"file": str(target), "bytes": len(response.content)}


def retention(args: argparse.Namespace, client: Client) -> Any:
    """The policy, the stream's size and what was archived; a table shows one line of each."""
    answer = client.get("/v4/audit/retention")
    if args.output not in ("table", "wide"):
        return answer
    policy, stream, archived = answer["policy"], answer["stream"], answer["archived"]
    after = policy["finished_after_seconds"]
    return {
        "policy": (f"finished workflows after {after / 86400:g} days" if after else "no age limit")
                  + (f", stream at most {policy['max_bytes']} bytes" if policy["max_bytes"] else "")
                  + ("" if policy["on"] else " (off)"),
        "stream": f"{stream['name']}: {stream['messages']} messages, {stream['bytes']} bytes",
        "oldest kept": stream["oldest_kept"] or "-",
        "archived": f"{archived['workflows']} workflows, {archived['events']} events, {archived['files']} files, "
                    f"{archived['bytes']} bytes in {archived['directory']}",
        "waiting to be purged": archived["pending_purge"],
    }


def add_filters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--since", help="from this time on (ISO 8601; no offset means UTC)")
    parser.add_argument("--until", help="before this time (ISO 8601; no offset means UTC)")
    parser.add_argument("--principal", help="who did it (a username or a component: scheduler, agent, ...)")
    parser.add_argument("--type", help="event type, e.g. Workflow.Submitted or Node.HoldPlaced")
    parser.add_argument("--node", help="events on this node")
    parser.add_argument("--workflow", help="events of this workflow and its allocations")
    parser.add_argument("--organization", type=org_ref,
                        help="an organization, by name or id (cluster admins; owners see their own)")


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    group = commands.add_parser("audit", help="who did what, when (cluster admins; organization owners see theirs)")
    sub = group.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = sub.add_parser("list", parents=[common], help="audit rows in log order, filtered")
    add_filters(p)
    p.add_argument("--limit", type=int, default=100, help="at most this many rows (1 to 10000)")
    p.add_argument("--after", type=int, help="rows after this position (to page on)")
    p.add_argument("--newest", action="store_true", help="the newest rows first (default: log order, oldest first)")
    p.set_defaults(handler=list_rows, columns=COLUMNS)
    p = sub.add_parser("query", parents=[common], help="one read-only SELECT over the `audit` view")
    p.add_argument("sql", metavar="SQL", help="e.g. \"SELECT principal, count(*) FROM audit GROUP BY 1\"")
    p.set_defaults(handler=query)
    p = sub.add_parser("export", parents=[common], help="every filtered row to a Parquet file")
    p.add_argument("--parquet", required=True, metavar="FILE", help="where to write the file")
    add_filters(p)
    p.set_defaults(handler=export)
    p = sub.add_parser("retention", parents=[common],
                       help="the event stream's retention: the policy, the stream's size, what was archived (admins)")
    p.set_defaults(handler=retention)

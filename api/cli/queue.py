"""`roving queue show|stats`: the scheduler's queue (yours, or the whole cluster's for admins).

On a federated control plane both cover every cluster of the federation, each row and figure with its
cluster; `--cluster ID` (repeatable or comma-separated) scopes them. A cluster that cannot be asked, or
whose data is old, is named on standard error with the age of its data (stdout stays the table or JSON).
Exit codes: 0 done, 1 the API refused, 2 bad usage (including a cluster the federation does not know).
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from api.cli.client import ApiError, Client
from api.cli.output import render
from api.cli.tenancy import group_ref, user_ref

# squeue's habit: who, how long, and why it waits (REASON is the scheduler's, "-" once running)
COLUMNS = ["id", "workflow_id", "stage", "user", "state", "priority", "weight", "elapsed", "node", "reason"]
WEIGHTS = ("organization", "group", "user", "workflow")  # the priority inputs WEIGHT shows, in this order
WIDE = ["group", "nodes", "resources", "queued_at", "preemptible"]  # -o wide: where, how much, since when
STATES = ["PENDING", "READY", "RUNNING", "FINISHED", "FAILED", "CANCELED", "PREEMPTED", "EVICTED"]
STATS_COLUMNS = ["cluster", "stale", "age", "total", *STATES]


def scope(args: argparse.Namespace) -> list[str] | None:
    return list(args.cluster) or None


def ask(client: Client, path: str, **params: Any) -> Any:
    """The answer, or exit code 2 when the API calls the request bad (HTTP 400), as argparse would."""
    try:
        return client.get(path, **params)
    except ApiError as error:
        if str(error).endswith("(HTTP 400)"):
            print(f"roving: {error}", file=sys.stderr)
            return 2
        raise


def warn_stale(answer: dict[str, Any]) -> None:
    hub = answer.get("hub") or {}
    if hub.get("available") is False:
        print(f"warning: {hub.get('error')}", file=sys.stderr)
    for c in answer.get("clusters", []):
        if c.get("stale"):
            age = c.get("last_event_age_seconds")
            since = f"its newest event is {age:.0f} s old" if age is not None else "no event of it reached the hub"
            why = c.get("error") or f"the hub heard nothing from it for {c.get('last_contact_seconds')} s"
            print(f"warning: cluster {c['cluster']} is stale ({why}); {since}", file=sys.stderr)


def owner_ref(text: str) -> str:
    """`--owner`: a user by name, a group as ORG/NAME, or either by id (names map to ids without a lookup)."""
    try:
        return str(UUID(text))
    except ValueError:
        return group_ref(text) if "/" in text else user_ref(text)


CLEAR = "\x1b[H\x1b[2J"  # cursor home, clear screen: each refresh replaces the last, as watch(1) does


def watch(args: argparse.Namespace, client: Client) -> int:
    """`queue show --watch [SECONDS]`: the queue again every SECONDS until Ctrl-C (on a terminal, in place)."""
    try:
        while True:
            rows = shown(args, client)
            if isinstance(rows, int):
                return rows
            text = render(rows, args.output, args.columns, headers=not args.no_headers)
            stamp = f"every {args.watch:g}s: roving queue show    {datetime.now(UTC):%Y-%m-%d %H:%M:%S}Z\n"
            screen = sys.stdout.isatty() and args.output == "table"
            sys.stdout.write((CLEAR + stamp if screen else "") + text + "\n")
            sys.stdout.flush()
            time.sleep(args.watch)
    except KeyboardInterrupt:
        return 0


def show(args: argparse.Namespace, client: Client) -> Any:
    return watch(args, client) if args.watch else shown(args, client)


def shown(args: argparse.Namespace, client: Client) -> Any:
    answer = ask(client, "/v4/scheduler/queue", mine="true" if args.mine else None, queue=args.queue,
                 priority_min=args.priority_min, owner=args.owner, cluster=scope(args))
    if isinstance(answer, int):
        return answer
    if "clusters" in answer:
        warn_stale(answer)
        args.columns = ["cluster", *COLUMNS]
    if args.output != "table":
        return answer["queue"]
    now = datetime.now(UTC)
    return [{**row, "user": row.get("user") or row.get("user_id"), "group": row.get("group") or row.get("group_id"),
             "weight": weight(row), "elapsed": elapsed(row, now), "reason": row.get("reason") or None}
            for row in answer["queue"]]


def weight(row: dict[str, Any]) -> str:
    """`5/2/1/0`: the organization, group, user and workflow priorities the priority expression weighs (PRIORITY
    is what it made of them and of the time waited); "-" where the queue does not say."""
    inputs = row.get("priority_inputs") or {}
    if not inputs:
        return "-"
    return "/".join(str(inputs.get(term, 0)) for term in WEIGHTS)


def elapsed(row: dict[str, Any], now: datetime) -> str:
    """Time running (or, before it starts, time waiting since queued) as D-HH:MM:SS, as squeue prints it."""
    began = row.get("started_at") or row.get("queued_at")
    if not began:
        return "-"
    end = row.get("ended_at")
    seconds = max(0, int(((datetime.fromisoformat(end) if end else now) - datetime.fromisoformat(began)).total_seconds()))
    days, rest = divmod(seconds, 86400)
    clock = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{clock}" if days else clock


def stats(args: argparse.Namespace, client: Client) -> Any:
    answer = ask(client, "/v4/scheduler/stats", cluster=scope(args))
    if isinstance(answer, dict) and args.output == "table" and "shared_resources" in answer:
        answer = {**answer, "shared_resources": shared_line(answer["shared_resources"])}
    if isinstance(answer, int) or "clusters" not in answer:
        return answer
    warn_stale(answer)
    if args.output != "table":
        return answer
    args.columns = STATS_COLUMNS
    return [{"cluster": c["cluster"], "stale": c.get("stale"), "age": _age(c), "total": c.get("total"),
             **c.get("depth", {})} for c in answer["clusters"]]


def shared_line(rows: list[dict[str, Any]]) -> str:
    """`ansys 18/20 in use (3 jobs), fluent 0/4 in use`: the shared resources (licenses) as a person reads them."""
    return ", ".join(f"{r['name']} {r['used']}/{r['total']} in use" + (f" ({r['holders']} jobs)" if r["holders"] else "")
                     for r in rows) or "none"


def _age(cluster: dict[str, Any]) -> str:
    age = cluster.get("last_event_age_seconds")
    return "-" if cluster.get("local") or age is None else f"{age:.0f}s"


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    group = commands.add_parser("queue", help="the scheduler's queue and statistics")
    sub = group.add_subparsers(dest="action", metavar="ACTION", required=True)
    scoped = argparse.ArgumentParser(add_help=False)
    scoped.add_argument("--cluster", action="append", default=[], metavar="ID",
                        help="federated control plane: only these clusters (repeat, or comma-separate: c1,c2)")
    p = sub.add_parser("show", parents=[common, scoped], help="allocations in effective-priority order",
                       description="Allocations in effective-priority order, users and groups by name (-o json "
                                   "keeps their ids). WEIGHT is ORG/GROUP/USER/WORKFLOW: the priorities the "
                                   "scheduler's priority expression weighs into PRIORITY. -o wide adds GROUP, "
                                   "NODES, RESOURCES, QUEUED_AT and PREEMPTIBLE; --no-headers leaves out the "
                                   "header line.")
    p.add_argument("--mine", action="store_true", help="only your own work (always so unless you are an admin)")
    p.add_argument("--queue", help="only this state: PENDING, READY, RUNNING, ...")
    p.add_argument("--priority-min", type=float, help="only allocations at or above this priority")
    p.add_argument("--owner", type=owner_ref, help="only this user (name or id) or group (ORG/NAME or id)")
    p.add_argument("--watch", type=float, nargs="?", const=2.0, metavar="SECONDS",
                   help="show it again every SECONDS (default 2) until Ctrl-C, in place on a terminal")
    p.set_defaults(handler=show, columns=COLUMNS, wide_columns=WIDE)
    p = sub.add_parser("stats", parents=[common, scoped], help="depths per state and the last scheduling pass")
    p.set_defaults(handler=stats)

"""`roving federation status|queue-stats|workflows|describe|events`: every member cluster, read from the hub.

Cluster admins only; the control plane must run with ROVING_FEDERATION_HUB. `--cluster ID` (repeatable or
comma-separated) scopes the answer. A member that is down is shown as unavailable, never as an empty cluster.
(`roving federate` is the process that creates the federated stream; this group only reads it.)
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from api.cli.client import Client
from api.cli.output import cell, table

MEMBER_COLUMNS = ["cluster", "domain", "state", "available", "lag", "last_seen_seq", "member_last_seq", "error"]
STATS_COLUMNS = ["cluster", "available", "state", "events", "workflows", "allocations", "stale",
                 "last_event_age_seconds", "error"]
WORKFLOW_COLUMNS = ["cluster", "id", "name", "status", "version", "available"]
EVENT_COLUMNS = ["cluster", "seq", "origin_seq", "type", "aggregate_id", "version"]


def scope(args: argparse.Namespace) -> list[str] | None:
    return list(args.cluster) or None


def unavailable(clusters: list[dict[str, Any]]) -> list[str]:
    """One line per cluster in the answer that cannot be asked, with why."""
    return [f"cluster {c['cluster']} is unavailable: {c.get('error') or c.get('state') or 'no answer'}"
            for c in clusters if c.get("available") is False]


def status(args: argparse.Namespace, client: Client) -> Any:
    answer = client.get("/v4/federation/status", cluster=scope(args))
    if args.output != "table":
        return answer
    if not answer["exists"]:
        return (f"{answer['stream']} does not exist on {answer['hub']}: "
                "run `roving federate --hub URL --member CLUSTER=DOMAIN ...`")
    head = f"{answer['stream']} on {answer['hub']}: {answer['messages']} events"
    return "\n".join([head, table(answer["members"], MEMBER_COLUMNS)])


def queue_stats(args: argparse.Namespace, client: Client) -> Any:
    answer = client.get("/v4/federation/queue/stats", cluster=scope(args))
    return answer if args.output != "table" else answer["clusters"]


def workflows(args: argparse.Namespace, client: Client) -> Any:
    """The rows on standard output; a cluster that cannot be asked is named on standard error."""
    answer = client.get("/v4/federation/workflows", cluster=scope(args))
    if args.output != "table":
        return answer
    for line in unavailable(answer["clusters"]):
        print(f"warning: {line}", file=sys.stderr)
    return answer["workflows"]


def describe(args: argparse.Namespace, client: Client) -> Any:
    answer = client.get(f"/v4/federation/workflows/{args.id}", cluster=scope(args))
    if args.output != "table":
        return answer
    fields = {k: v for k, v in answer.items() if k != "stages"}
    lines = [f"{k}: {cell(v)}" for k, v in fields.items()]
    return "\n".join([*lines, "", table(answer["stages"], ["name", "status", "attempt", "node", "exit_code",
                                                             "reason"])])


def events(args: argparse.Namespace, client: Client) -> Any:
    answer = client.get(f"/v4/federation/workflows/{args.id}/events", cluster=scope(args))
    if args.output != "table":
        return answer
    where = "available" if answer.get("available") is not False else f"unavailable: {answer.get('error')}"
    head = f"workflow {answer['workflow_id']} on cluster {answer['cluster']} ({where})"
    return "\n".join([head, table(answer["events"], EVENT_COLUMNS)])


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    group = commands.add_parser("federation", help="every member cluster's work, read from the federation hub")
    sub = group.add_subparsers(dest="action", metavar="ACTION", required=True)
    scoped = argparse.ArgumentParser(add_help=False)
    scoped.add_argument("--cluster", action="append", default=[], metavar="ID",
                        help="only these clusters (repeat, or comma-separate: --cluster c1,c2)")
    p = sub.add_parser("status", parents=[common, scoped], help="the federated stream and each member's state")
    p.set_defaults(handler=status)
    p = sub.add_parser("queue-stats", parents=[common, scoped],
                       help="per cluster: availability, events, workflows by status, allocations by state")
    p.set_defaults(handler=queue_stats, columns=STATS_COLUMNS)
    p = sub.add_parser("workflows", parents=[common, scoped], help="every workflow with its cluster and status")
    p.set_defaults(handler=workflows, columns=WORKFLOW_COLUMNS)
    p = sub.add_parser("describe", parents=[common, scoped], help="one workflow, from the cluster that owns it")
    p.add_argument("id", help="the workflow id")
    p.set_defaults(handler=describe)
    p = sub.add_parser("events", parents=[common, scoped], help="a workflow's events, from the cluster that owns it")
    p.add_argument("id", help="the workflow id")
    p.set_defaults(handler=events)

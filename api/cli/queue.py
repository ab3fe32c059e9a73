"""`roving queue show|stats`: the scheduler's queue (yours, or the whole cluster's for admins)."""

from __future__ import annotations

import argparse
from typing import Any

from api.cli.client import Client

COLUMNS = ["id", "workflow_id", "stage", "state", "priority", "node", "preemptible", "queued_at"]


def show(args: argparse.Namespace, client: Client) -> Any:
    answer = client.get("/v4/scheduler/queue", mine="true" if args.mine else None, queue=args.queue,
                        priority_min=args.priority_min, owner=args.owner)
    return answer["queue"]


def stats(args: argparse.Namespace, client: Client) -> Any:
    return client.get("/v4/scheduler/stats")


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    group = commands.add_parser("queue", help="the scheduler's queue and statistics")
    sub = group.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = sub.add_parser("show", parents=[common], help="allocations in effective-priority order")
    p.add_argument("--mine", action="store_true", help="only your own work (always so unless you are an admin)")
    p.add_argument("--queue", help="only this state: PENDING, READY, RUNNING, ...")
    p.add_argument("--priority-min", type=float, help="only allocations at or above this priority")
    p.add_argument("--owner", help="only this user or group id")
    p.set_defaults(handler=show, columns=COLUMNS)
    p = sub.add_parser("stats", parents=[common], help="depths per state and the last scheduling pass")
    p.set_defaults(handler=stats)

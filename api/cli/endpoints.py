"""`roving endpoint create|list|show|delete`: persistent endpoints that keep one URL across redeployments."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from api.cli.client import Client
from api.cli.tenancy import group_ref, org_ref, user_ref

COLUMNS = ["name", "scope", "status", "target", "workflow_id", "url", "reason"]


OWNER_REFS = {"user": user_ref, "group": group_ref, "organization": org_ref}  # a name (or id) -> the owner's id


def create(args: argparse.Namespace, client: Client) -> Any:
    try:
        owner = OWNER_REFS[args.owner_kind](args.owner) if args.owner else ""
    except argparse.ArgumentTypeError as error:
        print(f"roving: --owner: {error}", file=sys.stderr)
        return 2
    body = {"name": args.name, "scope": args.scope, "owner_kind": args.owner_kind, "owner_id": owner}
    return client.post("/v4/endpoints", json=body)


def list_endpoints(args: argparse.Namespace, client: Client) -> Any:
    return client.get("/v4/endpoints")["endpoints"]


def show(args: argparse.Namespace, client: Client) -> Any:
    return client.get(f"/v4/endpoints/{args.endpoint}")


def delete(args: argparse.Namespace, client: Client) -> Any:
    return client.delete(f"/v4/endpoints/{args.endpoint}")


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    group = commands.add_parser("endpoint", help="persistent endpoints: one URL across service redeployments")
    sub = group.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = sub.add_parser("create", parents=[common], help="create a persistent endpoint NAME")
    p.add_argument("name", metavar="NAME", help="lowercase letters, digits, - and _")
    p.add_argument("--scope", default="user", choices=["user", "group", "organization", "public"])
    p.add_argument("--owner-kind", default="user", choices=["user", "group", "organization"])
    p.add_argument("--owner", help="the owner (default: you): a group as ORG/NAME, an organization or user by name, "
                                   "or any of them by id")
    p.set_defaults(handler=create)
    p = sub.add_parser("list", parents=[common], help="endpoints you can see")
    p.set_defaults(handler=list_endpoints, columns=COLUMNS)
    for name, handler, summary in (("show", show, "one endpoint and its binding"),
                                   ("delete", delete, "delete an endpoint")):
        p = sub.add_parser(name, parents=[common], help=summary)
        p.add_argument("endpoint", metavar="ENDPOINT", help="endpoint name or id")
        p.set_defaults(handler=handler)

"""`roving node ...`: list, show, events, cordon, uncordon, evict, deprovision, remove, holds and credentials."""

from __future__ import annotations

import argparse
from typing import Any

from api.cli import pages
from api.cli.client import ApiError, Client
from api.cli.output import fail

COLUMNS = ["name", "id", "status", "cpu", "memory", "holds", "provisioner"]
HOLD_COLUMNS = ["id", "effect", "source", "reason", "by", "at"]
EVENT_COLUMNS = ["at", "type", "by", "message", "allocation"]
CREDENTIAL_COLUMNS = ["id", "issued_at", "expires", "revoked_at", "revoked_by", "reason"]


def list_nodes(args: argparse.Namespace, client: Client) -> Any:
    nodes = pages.rows(client, "/v4/nodes", "nodes", q=args.name)
    made = provisioned(client)
    if args.output != "table":
        return [{**n, "provisioner": made.get(n["name"])} for n in nodes]
    return [{**n, "memory": size(n.get("memory")), "holds": [f"{h['effect']}({h['source']})" for h in n["holds"]],
             "provisioner": _made_text(made.get(n["name"]))} for n in nodes]


def provisioned(client: Client) -> dict[str, dict[str, Any]]:
    """Node name -> the provisioner that made it, its request's state and its template (none from an older API)."""
    try:
        rows = client.get("/v4/provisioners")["provisioners"]
    except ApiError:
        return {}
    return {n["node"]: {"name": p["name"], "state": n["state"], "template": p["template"]}
            for p in rows for n in p["nodes"]}


def _made_text(made: dict[str, Any] | None) -> str | None:
    if made is None:
        return None
    t = made["template"]
    return f"{made['name']} ({made['state']}, {t['cpu']}cpu/{size(t['memory'])})"


def size(count: Any) -> Any:
    """Bytes as a person reads them in a table (8GiB); -o json and yaml keep the exact number."""
    if not isinstance(count, int) or isinstance(count, bool):
        return count
    value, unit = float(count), "B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            break
        value /= 1024
    return f"{value:.4g}{unit}"


def show(args: argparse.Namespace, client: Client) -> Any:
    return client.get(f"/v4/nodes/{args.node}")


def events(args: argparse.Namespace, client: Client) -> Any:
    return client.get(f"/v4/nodes/{args.node}/events")["events"]


def each(args: argparse.Namespace, client: Client, path: str, body: Any = None) -> Any:
    """The same command for every NODE given (or every node with --all)."""
    names = list(args.nodes)
    if getattr(args, "all", False):
        names = [n["name"] for n in client.get("/v4/nodes")["nodes"]]
    if not names:
        fail("name at least one node (or use --all)")
    return [{"node": name, **client.post(f"/v4/nodes/{name}/{path}", body)} for name in names]


def cordon(args: argparse.Namespace, client: Client) -> Any:
    return each(args, client, "cordon", {"reason": args.reason})


def uncordon(args: argparse.Namespace, client: Client) -> Any:
    return each(args, client, "uncordon")


def evict(args: argparse.Namespace, client: Client) -> Any:
    return each(args, client, "evict", {"reason": args.reason})


def deprovision(args: argparse.Namespace, client: Client) -> Any:
    return each(args, client, "deprovision", {"evict": args.evict, "force": args.force})


def remove(args: argparse.Namespace, client: Client) -> Any:
    return [{"node": name, **client.delete(f"/v4/nodes/{name}")} for name in args.nodes]


def hold_list(args: argparse.Namespace, client: Client) -> Any:
    return client.get(f"/v4/nodes/{args.node}/holds")["holds"]


def hold_add(args: argparse.Namespace, client: Client) -> Any:
    return client.post(f"/v4/nodes/{args.node}/holds", {"effect": args.effect, "reason": args.reason})


def hold_release(args: argparse.Namespace, client: Client) -> Any:
    params = {"force": "true"} if args.force else {}
    return client.request("DELETE", f"/v4/nodes/{args.node}/holds/{args.hold}", params=params)


def credential_list(args: argparse.Namespace, client: Client) -> Any:
    return client.get(f"/v4/nodes/{args.node}/credentials")["credentials"]


def credential_revoke(args: argparse.Namespace, client: Client) -> Any:
    return client.request("DELETE", f"/v4/nodes/{args.node}/credentials/{args.credential}",
                          json={"reason": args.reason})


def readmit(args: argparse.Namespace, client: Client) -> Any:
    return each(args, client, "readmit")


def add_credentials(sub: Any, common: argparse.ArgumentParser) -> None:
    creds = sub.add_parser("credential", help="the tokens issued to a node's agents (cluster admins)")
    csub = creds.add_subparsers(dest="credential_action", metavar="ACTION", required=True)
    p = csub.add_parser("list", parents=[common], help="a node's credentials by id, and which are revoked")
    p.add_argument("node")
    p.set_defaults(handler=credential_list, columns=CREDENTIAL_COLUMNS)
    p = csub.add_parser("revoke", parents=[common],
                        help="refuse a credential and fence its node (OFFLINE until an admin registers it again)")
    p.add_argument("node")
    p.add_argument("credential")
    p.add_argument("--reason", default="revoked by an administrator")
    p.set_defaults(handler=credential_revoke)
    several(sub, common, "readmit", readmit, "lift the fence of nodes whose credential was revoked")


def several(sub: Any, common: argparse.ArgumentParser, name: str, handler: Any, text: str,
            everything: bool = False) -> argparse.ArgumentParser:
    p = sub.add_parser(name, parents=[common], help=text)
    p.add_argument("nodes", nargs="*" if everything else "+", metavar="NODE", help="node names or ids")
    if everything:
        p.add_argument("--all", action="store_true", help="every node")
    p.set_defaults(handler=handler)
    return p


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    group = commands.add_parser("node", help="nodes and their holds (changes need the cluster admin role)")
    sub = group.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = sub.add_parser("list", parents=[common], help="every node with status and holds, by name")
    p.add_argument("--name", help="only nodes whose name holds this text")
    p.set_defaults(handler=list_nodes, columns=COLUMNS)
    p = sub.add_parser("show", parents=[common], help="one node in full")
    p.add_argument("node")
    p.set_defaults(handler=show)
    p = sub.add_parser("events", parents=[common], help="a node's event log, newest first (the last 200)")
    p.add_argument("node")
    p.set_defaults(handler=events, columns=EVENT_COLUMNS)
    several(sub, common, "cordon", cordon, "stop new work landing on nodes").add_argument("--reason", default="")
    several(sub, common, "uncordon", uncordon, "release admin cordons (monitoring holds stay)")
    several(sub, common, "evict", evict, "move running work off nodes").add_argument("--reason", default="")
    p = several(sub, common, "deprovision", deprovision, "retire nodes once idle", everything=True)
    p.add_argument("--evict", action="store_true", help="evict running work first")
    p.add_argument("--force", action="store_true", help="do not wait for work to finish")
    several(sub, common, "remove", remove, "forget nodes")
    add_credentials(sub, common)
    holds = sub.add_parser("hold", help="list, add and release holds")
    hsub = holds.add_subparsers(dest="hold_action", metavar="ACTION", required=True)
    p = hsub.add_parser("list", parents=[common], help="a node's holds")
    p.add_argument("node")
    p.set_defaults(handler=hold_list, columns=HOLD_COLUMNS)
    p = hsub.add_parser("add", parents=[common], help="place a hold")
    p.add_argument("node")
    p.add_argument("--effect", choices=["cordon", "evict", "deprovision"], default="cordon")
    p.add_argument("--reason", default="")
    p.set_defaults(handler=hold_add)
    for name in ("release", "remove"):
        p = hsub.add_parser(name, parents=[common], help="release a hold by id (only by its own source's rules)")
        p.add_argument("node")
        p.add_argument("hold")
        p.add_argument("--force", action="store_true",
                       help="admins: release monitoring evidence an alert keeps (fb_release: admin)")
        p.set_defaults(handler=hold_release)

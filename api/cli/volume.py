"""`roving volume provisioner create|list|show|delete`: volume provisioners are cluster admins' programs that make
a storage class's volumes (a Lustre directory, a cloud volume mounted on the nodes); all four are admins' only.

`create NAME --class CLASS --program PATH --root DIR` defines one (`PUT /v4/volume-provisioners/NAME`); a workflow
that mounts `volume://user/CLASS[/NAME]` or `volume://group/CLASS/NAME` waits while the program makes it, then runs
with it. The program reads one JSON object on stdin and prints `{"path": DIR}` (a directory under --root) or exits
non-zero with `{"error": "..."}`; see docs/admin-guide.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from api.cli.client import Client
from domain.durations import DurationError, parse_duration

COLUMNS = ["name", "class", "program", "root", "volumes"]
VOLUME_COLUMNS = ["reference", "organization", "uid", "gid", "state", "path", "reason"]
PATH = "/v4/volume-provisioners"


def create(args: argparse.Namespace, client: Client) -> Any:
    body: dict[str, Any] = {"class": args.storage_class, "program": str(Path(args.program).absolute()),
                            "root": args.root}
    if args.timeout is not None:
        try:
            body["timeoutSeconds"] = parse_duration(args.timeout)
        except DurationError as error:
            print(f"roving volume provisioner: --timeout: {error}", file=sys.stderr)
            return 2
    return _shown(client.put(f"{PATH}/{args.name}", json=body), args.output)


def list_provisioners(args: argparse.Namespace, client: Client) -> Any:
    rows = client.get(PATH)["provisioners"]
    return rows if args.output != "table" else [{**p, "volumes": _counts(p["volumes"])} for p in rows]


def show(args: argparse.Namespace, client: Client) -> Any:
    return _shown(client.get(f"{PATH}/{args.name}"), args.output)


def delete(args: argparse.Namespace, client: Client) -> Any:
    return client.delete(f"{PATH}/{args.name}")


def _shown(p: dict[str, Any], fmt: str) -> Any:
    if fmt != "table":
        return p
    volumes = p["volumes"]
    if isinstance(volumes, dict):
        return {**p, "volumes": _counts(volumes)}
    return {**p, "volumes": [f"{v['reference']}@{v['organization'] or '-'}:{v['state']}"
                             + (f" {v['path']}" if v["path"] else f" {v['reason']}" if v["reason"] else "")
                             for v in volumes] or "-"}


def _counts(counts: dict[str, int]) -> str:
    return ",".join(f"{state}={n}" for state, n in sorted(counts.items())) or "-"


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    group = commands.add_parser("volume", help="volumes: the provisioners that make storage classes' volumes")
    sub = group.add_subparsers(dest="noun", metavar="NOUN", required=True)
    noun = sub.add_parser("provisioner", help="cluster admins: programs that make a storage class's volumes",
                          description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = noun.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = actions.add_parser("create", parents=[common], help="create (or replace) volume provisioner NAME",
                           description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name", metavar="NAME", help="lower-case letters, digits, dashes")
    p.add_argument("--class", dest="storage_class", required=True, metavar="CLASS",
                   help="the storage class whose volumes it makes (not persistent or ephemeral)")
    p.add_argument("--program", required=True, metavar="PATH", help="the program run on the control plane's host")
    p.add_argument("--root", required=True, metavar="DIR",
                   help="every directory the program answers must be under it (as the nodes see it)")
    p.add_argument("--timeout", help="how long the program may run before it is killed (default 300s)")
    p.set_defaults(handler=create)
    p = actions.add_parser("list", parents=[common], help="every volume provisioner with its volumes by state")
    p.set_defaults(handler=list_provisioners, columns=COLUMNS)
    p = actions.add_parser("show", parents=[common], help="one volume provisioner and each volume it was asked for")
    p.add_argument("name", metavar="NAME")
    p.set_defaults(handler=show)
    p = actions.add_parser("delete", parents=[common],
                           help="no new volumes of its class; volumes being made fail (made ones stay)")
    p.add_argument("name", metavar="NAME")
    p.set_defaults(handler=delete)

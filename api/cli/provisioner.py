"""`roving provisioner create|list|show|delete`: provisioners bring nodes up for work no node can take and take
idle ones down; cluster admins create and delete them, every user lists and shows them.

`create` sends the whole definition (`PUT /v4/provisioners/NAME`): from -f FILE (YAML or JSON with the API's keys:
provider, template, maxNodes, idleSeconds, expectedBootSeconds, bootTimeoutSeconds, settings) and/or options,
which add to (or replace) what the file says. Creating an existing name replaces its definition; the nodes it
already made keep running.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from api.cli.client import Client
from api.cli.nodes import size
from domain.durations import DurationError, parse_duration

COLUMNS = ["name", "provider", "template", "maxNodes", "idleSeconds", "nodes"]
NODE_COLUMNS = ["node", "state", "attempts", "requestedAt", "upAt", "lastError"]
PROVIDERS = ("local", "command")


class Usage(Exception):
    """Bad usage found before asking the API: printed, exit 2."""


def body_of(args: argparse.Namespace) -> dict[str, Any]:
    body = _file(args.file) if args.file else {}
    for key, value in (("provider", args.provider), ("maxNodes", args.max_nodes)):
        if value is not None:
            body[key] = value
    for key, option in (("idleSeconds", "idle"), ("expectedBootSeconds", "expected_boot"),
                        ("bootTimeoutSeconds", "boot_timeout")):
        if getattr(args, option) is not None:
            body[key] = _seconds(getattr(args, option), f"--{option.replace('_', '-')}")
    template = body.setdefault("template", {})
    for key, value in (("cpu", args.cpu), ("memory", args.memory), ("segment", args.segment)):
        if value is not None:
            template[key] = value
    template.setdefault("devices", {}).update({k: _count(v) for k, v in _pairs(args.device, "--device").items()})
    template.setdefault("annotations", {}).update(_pairs(args.annotation, "--annotation"))
    settings = body.setdefault("settings", {})
    settings.update({k: yaml.safe_load(v) if v else v for k, v in _pairs(args.setting, "--setting").items()})
    for key in ("create", "delete"):
        if getattr(args, f"{key}_program") is not None:
            settings[key] = str(Path(getattr(args, f"{key}_program")).absolute())
    for missing in ("provider", "maxNodes"):
        if missing not in body:
            raise Usage(f"say the {missing} (--{'max-nodes' if missing == 'maxNodes' else missing} or in -f FILE)")
    return _pruned(body)


def _pruned(body: dict[str, Any]) -> dict[str, Any]:
    template = {k: v for k, v in body["template"].items() if v not in ({}, None)}
    return {**{k: v for k, v in body.items() if v not in ({}, None)}, "template": template}


def _file(path: str) -> dict[str, Any]:
    try:
        loaded = yaml.safe_load(Path(path).read_text())
    except (OSError, UnicodeDecodeError) as error:
        raise Usage(f"-f: cannot read {path} ({error})") from None
    except yaml.YAMLError as error:
        raise Usage(f"-f: {path} is not YAML or JSON ({error})") from None
    if not isinstance(loaded, dict):
        raise Usage(f"-f: {path} must hold a mapping with keys provider, template, maxNodes, idleSeconds, settings")
    return loaded


def _pairs(entries: list[str] | None, option: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for entry in entries or []:
        key, sep, value = entry.partition("=")
        if not sep or not key:
            raise Usage(f"{option}: expected KEY=VALUE, got {entry!r}")
        pairs[key] = value
    return pairs


def _count(text: str) -> int:
    if not text.isdigit():
        raise Usage(f"--device: expected NAME=COUNT with a whole count, got {text!r}")
    return int(text)


def _seconds(text: str, option: str) -> float:
    try:
        return parse_duration(text)
    except DurationError as error:
        raise Usage(f"{option}: {error}") from None


def create(args: argparse.Namespace, client: Client) -> Any:
    try:
        body = body_of(args)
    except Usage as error:
        print(f"roving provisioner: {error}", file=sys.stderr)
        return 2
    return _shown(client.put(f"/v4/provisioners/{args.name}", json=body), args.output)


def list_provisioners(args: argparse.Namespace, client: Client) -> Any:
    rows = client.get("/v4/provisioners")["provisioners"]
    if args.output != "table":
        return rows
    return [{**p, "template": template_text(p["template"]), "nodes": _counts(p["nodes"])} for p in rows]


def show(args: argparse.Namespace, client: Client) -> Any:
    return _shown(client.get(f"/v4/provisioners/{args.name}"), args.output)


def delete(args: argparse.Namespace, client: Client) -> Any:
    return client.delete(f"/v4/provisioners/{args.name}")


def _shown(p: dict[str, Any], fmt: str) -> Any:
    if fmt != "table":
        return p
    return {**{k: v for k, v in p.items() if k not in ("nodes", "history")}, "template": template_text(p["template"]),
            "nodes": [f"{n['node']}:{n['state']}" for n in p["nodes"]] or "-"}


def template_text(t: dict[str, Any]) -> str:
    """`4cpu/4GiB`, then devices, annotations and segment when the template has them."""
    parts = [f"{t['cpu']}cpu/{size(t['memory'])}"]
    parts += [f"{name}={count}" for name, count in sorted((t.get("devices") or {}).items())]
    parts += [f"{key}={value}" for key, value in sorted((t.get("annotations") or {}).items())]
    return " ".join(parts + ([f"segment={t['segment']}"] if t.get("segment") else []))


def _counts(nodes: list[dict[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for node in nodes:
        counts[node["state"]] = counts.get(node["state"], 0) + 1
    return ",".join(f"{state}={count}" for state, count in sorted(counts.items())) or "-"


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    group = commands.add_parser("provisioner", help="provisioners: nodes made for waiting work, removed when idle")
    sub = group.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = sub.add_parser("create", parents=[common], help="cluster admins: create (or replace) provisioner NAME",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name", metavar="NAME", help="lower-case letters, digits, dashes; its nodes are NAME-1, NAME-2, ...")
    p.add_argument("-f", "--file", help="YAML or JSON with the API's keys (options add to it)")
    p.add_argument("--provider", choices=PROVIDERS, help="local: agents on the control plane's host; command: your "
                                                         "create and delete programs (JSON on stdin and stdout)")
    p.add_argument("--cpu", type=int, help="cpus each node declares")
    p.add_argument("--memory", help="memory each node declares, e.g. 4GiB")
    p.add_argument("--device", action="append", metavar="NAME=COUNT", help="devices each node has, e.g. nvidia.com/gpu=4")
    p.add_argument("--annotation", action="append", metavar="KEY=VALUE", help="an annotation each node carries")
    p.add_argument("--segment", help="the storage segment its nodes are in")
    p.add_argument("--max-nodes", type=int, help="most nodes at once, counting those being made")
    p.add_argument("--idle", help="how long a node may sit idle before it is drained and deleted (default 300s)")
    p.add_argument("--expected-boot", help="how long a node takes to come up, until one was measured")
    p.add_argument("--boot-timeout", help="a node not READY by then failed: deleted, asked again after a backoff")
    p.add_argument("--create-program", metavar="PATH", help="command provider: the program that makes a node")
    p.add_argument("--delete-program", metavar="PATH", help="command provider: the program that deletes one")
    p.add_argument("--setting", action="append", metavar="KEY=VALUE", help="another provider setting")
    p.set_defaults(handler=create)
    p = sub.add_parser("list", parents=[common], help="every provisioner with its template and nodes by state")
    p.set_defaults(handler=list_provisioners, columns=COLUMNS)
    p = sub.add_parser("show", parents=[common], help="one provisioner: its definition, nodes and recent history")
    p.add_argument("name", metavar="NAME")
    p.set_defaults(handler=show)
    p = sub.add_parser("delete", parents=[common],
                       help="cluster admins: no new nodes; requests not yet made are canceled, its nodes drained")
    p.add_argument("name", metavar="NAME")
    p.set_defaults(handler=delete)

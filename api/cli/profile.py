"""`roving profile set|get|list|delete`: application profiles (env, resources, node annotations, hooks) that jobs
name with `profile:`; cluster admins set and delete them, every user reads them.

`set` takes the whole profile from -f FILE (YAML or JSON with the API's keys: env, resource, annotations, pre, post,
hook_timeout) and/or options; options add to (or replace) what the file says. A profile is set whole.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from api.cli.client import Client

COLUMNS = ["name", "revision", "env", "resource", "annotations", "hook_timeout", "changed_by", "changed_at"]
KEYS = ("env", "resource", "annotations", "pre", "post", "hook_timeout")


class Usage(Exception):
    """Bad usage found before asking the API: printed, exit 2."""


def body_of(args: argparse.Namespace) -> dict[str, Any]:
    body = _file(args.file) if args.file else {}
    body.setdefault("env", {}).update(_pairs(args.env, "--env"))
    body.setdefault("annotations", {}).update(_pairs(args.annotation, "--annotation"))
    resource = body.setdefault("resource", {})
    if args.cores is not None:
        resource.setdefault("cpu", {})["cores"] = args.cores
    if args.memory is not None:
        resource.setdefault("memory", {})["size"] = args.memory
    devices = {name: _count(count) for name, count in _pairs(args.device, "--device").items()}
    if devices:
        resource.setdefault("devices", {}).update(devices)
    for hook in ("pre", "post"):
        if (path := getattr(args, f"{hook}_file")) is not None:
            body[hook] = _read(Path(path), f"--{hook}-file")
    if args.hook_timeout is not None:
        body["hook_timeout"] = args.hook_timeout
    return {key: value for key, value in body.items() if value not in ({}, None)}


def _file(path: str) -> dict[str, Any]:
    try:
        loaded = yaml.safe_load(_read(Path(path), "-f"))
    except yaml.YAMLError as error:
        raise Usage(f"-f: {path} is not YAML or JSON ({error})") from None
    if not isinstance(loaded, dict):
        raise Usage(f"-f: {path} must hold a mapping with keys {', '.join(KEYS)}")
    return loaded


def _read(path: Path, option: str) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise Usage(f"{option}: cannot read {path} ({error})") from None


def _pairs(entries: list[str] | None, option: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for entry in entries or []:
        key, sep, value = entry.partition("=")
        if not sep or not key:
            raise Usage(f"{option}: expected KEY=VALUE, got {entry!r}")
        pairs[key] = value
    return pairs


def _count(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise Usage(f"--device: expected NAME=COUNT with a whole count, got {text!r}") from None


def set_profile(args: argparse.Namespace, client: Client) -> Any:
    try:
        body = body_of(args)
    except Usage as error:
        print(f"roving profile: {error}", file=sys.stderr)
        return 2
    return client.put(f"/v4/profiles/{args.name}", json=body)


def get_profile(args: argparse.Namespace, client: Client) -> Any:
    return client.get(f"/v4/profiles/{args.name}")


def list_profiles(args: argparse.Namespace, client: Client) -> Any:
    return client.get("/v4/profiles")["profiles"]


def delete_profile(args: argparse.Namespace, client: Client) -> Any:
    return client.delete(f"/v4/profiles/{args.name}")


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    group = commands.add_parser("profile", help="application profiles jobs name with `profile:`")
    sub = group.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = sub.add_parser("set", parents=[common], help="cluster admins: set profile NAME whole (a new revision)")
    p.add_argument("name", metavar="NAME")
    p.add_argument("-f", "--file", help="YAML or JSON with env, resource, annotations, pre, post, hook_timeout")
    p.add_argument("--env", action="append", metavar="KEY=VALUE", help="an env variable every bound job gets")
    p.add_argument("--annotation", action="append", metavar="KEY=VALUE", help="a node annotation bound jobs require")
    p.add_argument("--cores", type=int, help="cores a bound job gets (and at most may ask for)")
    p.add_argument("--memory", help="memory a bound job gets (and at most may ask for), e.g. 4GiB")
    p.add_argument("--device", action="append", metavar="NAME=COUNT", help="devices (0: none allowed)")
    p.add_argument("--pre-file", metavar="PATH", help="a script run before each bound job, in its environment")
    p.add_argument("--post-file", metavar="PATH", help="a script run after each bound job, however it ended")
    p.add_argument("--hook-timeout", help="how long each hook may run (default 60s)")
    p.set_defaults(handler=set_profile)
    p = sub.add_parser("get", parents=[common], help="show profile NAME")
    p.add_argument("name", metavar="NAME")
    p.set_defaults(handler=get_profile)
    p = sub.add_parser("list", parents=[common], help="every profile")
    p.set_defaults(handler=list_profiles, columns=COLUMNS)
    p = sub.add_parser("delete", parents=[common], help="cluster admins: delete profile NAME")
    p.add_argument("name", metavar="NAME")
    p.set_defaults(handler=delete_profile)

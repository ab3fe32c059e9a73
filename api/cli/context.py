"""`roving context login|use|show|token` and `roving config get|set` (the cluster's central configuration)."""

from __future__ import annotations

import argparse
from typing import Any

import yaml

from api.cli.client import Client, current_context, load_contexts, save_contexts
from api.cli.output import fail
from api.cli.tenancy import password


def login(args: argparse.Namespace, client: Client) -> Any:
    """Log in with a password and store the tokens in the context file (mode 0600): the access token, and the
    refresh token that renews it when it expires."""
    data = load_contexts()
    name = args.name or data["current"]
    api = args.api or (data["contexts"].get(name) or {}).get("api") or current_context()["api"]
    with Client(api) as client:
        answer = client.post("/v4/auth/login", {"username": args.username, "password": password(args)})
    data["contexts"][name] = {"api": api, "token": answer["token"], "refresh_token": answer.get("refresh_token", ""),
                              "username": args.username}
    data["current"] = name
    path = save_contexts(data)
    return {"context": name, "api": api, "username": args.username, "saved": str(path)}


def use(args: argparse.Namespace, client: Client) -> Any:
    data = load_contexts()
    if args.name not in data["contexts"]:
        fail(f"no context {args.name!r}; known: {', '.join(data['contexts']) or 'none'}")
    data["current"] = args.name
    save_contexts(data)
    return {"current": args.name}


def show(args: argparse.Namespace, client: Client) -> Any:
    """The current context, without the token itself."""
    found = current_context()
    return {"current": load_contexts()["current"], "api": found["api"], "token": "set" if found["token"] else "none"}


def token(args: argparse.Namespace, client: Client) -> Any:
    """The current context's access token alone on stdout, for `curl -H "Authorization: Bearer $(roving context
    token)"` (e.g. a Prometheus scrape of /v4/metrics/node/NODE); asked for by name, unlike `show`, which hides it."""
    found = current_context()
    if not found["token"]:
        fail(f"context {load_contexts()['current']!r} holds no token; run `roving context login USERNAME`")
    print(found["token"])
    return 0


def config_get(args: argparse.Namespace, client: Client) -> Any:
    answer = client.get("/v4/admin/centralconfig")
    if args.key:
        settings, defaults = answer.get("settings", {}), answer.get("defaults", {})
        if args.key in settings:
            return {args.key: settings[args.key]}
        if args.key in defaults:  # not set: what the control plane uses instead
            return {args.key: defaults[args.key], "default": True}
        return {args.key: None}
    return answer


def config_set(args: argparse.Namespace, client: Client) -> Any:
    """VALUE is read as YAML, so numbers, booleans and lists keep their types."""
    return client.put("/v4/admin/centralconfig", {args.key: yaml.safe_load(args.value)})


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    sub = commands.add_parser("context", help="which API to talk to, as whom").add_subparsers(
        dest="action", metavar="ACTION", required=True)
    p = sub.add_parser("login", parents=[common], help="log in and store the token")
    p.add_argument("username")
    p.add_argument("--api", help="API address (default: the context's, or http://127.0.0.1:8080)")
    p.add_argument("--name", help="context name (default: the current one)")
    p.add_argument("--password-stdin", action="store_true")
    p.set_defaults(handler=login)
    p = sub.add_parser("use", parents=[common], help="switch context")
    p.add_argument("name")
    p.set_defaults(handler=use)
    sub.add_parser("show", parents=[common], help="the current context").set_defaults(handler=show)
    sub.add_parser("token", parents=[common], help="print the current context's access token").set_defaults(
        handler=token)
    sub = commands.add_parser("config", help="the cluster's central configuration (cluster admin)").add_subparsers(
        dest="action", metavar="ACTION", required=True)
    p = sub.add_parser("get", parents=[common], help="all settings, or one KEY")
    p.add_argument("key", nargs="?")
    p.set_defaults(handler=config_get)
    p = sub.add_parser("set", parents=[common], help="change one setting, e.g. scheduler.interval 5s")
    p.add_argument("key")
    p.add_argument("value")
    p.set_defaults(handler=config_set)

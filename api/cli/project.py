"""`roving project ...`: projects (nested by path) with roll-up quotas, members, subtree grants and default projects.

Cluster admins make and change projects; everyone lists the projects they belong to. Work counts toward its
project's quota and every ancestor's; `roving workflow why` says PROJECT_QUOTA with the figures when it waits.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any
from urllib.parse import quote

from api.cli.client import Client
from api.cli.tenancy import group_ref

COLUMNS = ["path", "quota", "used", "running", "members"]
PERMISSIONS = ("project:view", "workflow:view", "workflow:stop", "allocation:explain")


class Usage(Exception):
    """Bad usage found before asking the API: printed, exit 2."""


def url(path: str) -> str:
    return f"/v4/projects/{quote(path.strip('/'), safe='/')}"


def limit(text: str, option: str) -> int | str | None:
    """A quota figure from the command line: a whole number, `none` (no limit), or (memory) a size such as 64GiB."""
    if text.lower() == "none":
        return None
    if text.isdigit():
        return int(text)
    if option == "--memory":
        return text
    raise Usage(f"{option}: expected a whole number or none, got {text!r}")


def quota_of(args: argparse.Namespace) -> dict[str, Any]:
    quota: dict[str, Any] = {}
    if args.cpu is not None:
        quota["cpu"] = limit(args.cpu, "--cpu")
    if args.memory is not None:
        quota["memory"] = limit(args.memory, "--memory")
    for entry in args.device or []:
        name, sep, count = entry.partition("=")
        if not sep or not name:
            raise Usage(f"--device: expected NAME=COUNT (or NAME=none), got {entry!r}")
        quota.setdefault("devices", {})[name] = limit(count, "--device")
    return quota


def usage(handler):
    def run(args: argparse.Namespace, client: Client) -> Any:
        try:
            return handler(args, client)
        except Usage as error:
            print(f"roving project: {error}", file=sys.stderr)
            return 2
    return run


@usage
def create(args: argparse.Namespace, client: Client) -> Any:
    body = {"quota": quota_of(args), "members": args.member or []}
    return client.request("PUT", url(args.path), json=body, headers={"If-None-Match": "*"})


def list_projects(args: argparse.Namespace, client: Client) -> Any:
    return client.get("/v4/projects")["projects"]


def show(args: argparse.Namespace, client: Client) -> Any:
    return client.get(url(args.path))


def delete(args: argparse.Namespace, client: Client) -> Any:
    client.delete(url(args.path))
    return {"deleted": args.path}


@usage
def quota_set(args: argparse.Namespace, client: Client) -> Any:
    """The limits named change; the others stay (`--cpu none` lifts the cpu limit)."""
    changes = quota_of(args)
    if not changes:
        raise Usage("name at least one of --cpu, --memory, --device")
    current = dict(client.get(url(args.path)).get("quota") or {})
    devices = {**current.pop("devices", {}), **changes.pop("devices", {})}
    quota = {**current, **changes, "devices": devices}
    return client.put(url(args.path), {"quota": quota})


def member_add(args: argparse.Namespace, client: Client) -> Any:
    return client.request("PATCH", url(args.path), json={"add_members": args.users})


def member_remove(args: argparse.Namespace, client: Client) -> Any:
    return client.request("PATCH", url(args.path), json={"remove_members": args.users})


def grant(args: argparse.Namespace, client: Client) -> Any:
    return client.request("PATCH", url(args.path), json={"grant": {args.user: args.permissions}})


def revoke(args: argparse.Namespace, client: Client) -> Any:
    return client.request("PATCH", url(args.path), json={"revoke": {args.user: args.permissions}})


def default(args: argparse.Namespace, client: Client) -> Any:
    """A group's default project, or (without --group) the cluster's; --clear takes it away."""
    path = "" if args.clear else args.path
    if path is None:
        print("roving project: name a PATH, or --clear", file=sys.stderr)
        return 2
    if args.group:
        return client.put(f"/v4/groups/{args.group}/project", {"project": path})
    client.put("/v4/admin/centralconfig", {"projects.default": path or None})
    return {"projects.default": path or "(none)"}


def _path(p: argparse.ArgumentParser, text: str = "project path, e.g. physics/lattice") -> None:
    p.add_argument("path", metavar="PATH", help=text)


def _quota_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cpu", metavar="N", help="cores its subtree's running work may hold at once (none: no limit)")
    p.add_argument("--memory", metavar="SIZE", help="memory, e.g. 512GiB (none: no limit)")
    p.add_argument("--device", action="append", metavar="NAME=N", help="devices of one kind, e.g. gpu=8 (repeat)")


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    group = commands.add_parser(
        "project", help="projects: nested ownership with roll-up quotas, members and grants",
        description="Projects are named by path (physics/lattice under physics). Work counts toward its project's "
                    "quota and every ancestor's. Submitting into a project needs membership of that project itself. "
                    "Until the first project exists, work needs none.")
    sub = group.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = sub.add_parser("create", parents=[common], help="cluster admins: make a project (its parent must exist)")
    _path(p)
    _quota_options(p)
    p.add_argument("--member", action="append", metavar="USER", help="a member (repeat)")
    p.set_defaults(handler=create)
    p = sub.add_parser("list", parents=[common], help="projects you can see, with quota and use")
    p.set_defaults(handler=list_projects, columns=COLUMNS, wide_columns=["children", "grants"])
    p = sub.add_parser("show", parents=[common], help="one project: quota, use (its subtree's), members")
    _path(p)
    p.set_defaults(handler=show)
    p = sub.add_parser("delete", parents=[common], help="cluster admins: delete a project without children")
    _path(p)
    p.set_defaults(handler=delete)
    quota = sub.add_parser("quota", help="change a project's quota").add_subparsers(
        dest="quota_action", metavar="ACTION", required=True)
    p = quota.add_parser("set", parents=[common], help="set the limits named; the others stay")
    _path(p)
    _quota_options(p)
    p.set_defaults(handler=quota_set)
    members = sub.add_parser("member", help="add or remove members").add_subparsers(
        dest="member_action", metavar="ACTION", required=True)
    for name, handler in (("add", member_add), ("remove", member_remove)):
        p = members.add_parser(name, parents=[common], help=f"{name} members by username")
        _path(p)
        p.add_argument("users", nargs="+", metavar="USER")
        p.set_defaults(handler=handler)
    for name, handler, text in (("grant", grant, "give USER permissions over the project's whole subtree"),
                                ("revoke", revoke, "take permissions back")):
        p = sub.add_parser(name, parents=[common], help=text,
                           description=f"{text}. project:view shows the project (quota, use, members); workflow:view, "
                                       "workflow:stop and allocation:explain act on the work submitted into it, "
                                       "within the holder's own organization.")
        _path(p)
        p.add_argument("user", metavar="USER")
        p.add_argument("permissions", nargs="+", metavar="PERMISSION", choices=PERMISSIONS)
        p.set_defaults(handler=handler)
    p = sub.add_parser("default", parents=[common], help="where work goes that names no project",
                       description="With --group: that group's default project (org owners, cluster admins); "
                                   "without: the cluster's (projects.default). A group's comes first.")
    p.add_argument("path", metavar="PATH", nargs="?")
    p.add_argument("--group", type=group_ref, metavar="ORG/GROUP", help="the group (id or ORG/NAME)")
    p.add_argument("--clear", action="store_true", help="no default")
    p.set_defaults(handler=default)

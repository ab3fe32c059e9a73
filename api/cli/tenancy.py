"""`roving org|group|user ...`: organizations, groups (priority, preempt lists, members) and users."""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any
from uuid import UUID

from api.cli.client import Client
from api.cli.output import fail, named
from domain.ids import MAX_POSIX_ID, group_id, org_id, user_id

PREEMPT = {"preempt": "preempt_names"}
GROUP_NAMES = {**PREEMPT, "members": "member_names"}  # a table shows these lists by name; json keeps the ids


def org_ref(text: str) -> str:
    """An organization id, or its name (names map to ids deterministically)."""
    try:
        return str(UUID(text))
    except ValueError:
        return str(org_id(text))


def group_ref(text: str) -> str:
    """A group id, or ORG/NAME."""
    try:
        return str(UUID(text))
    except ValueError:
        org, _, name = text.partition("/")
        if not name:
            raise argparse.ArgumentTypeError(f"{text!r}: give a group id or ORG/NAME") from None
        return str(group_id(UUID(org_ref(org)), name))


def user_ref(text: str) -> str:
    try:
        return str(UUID(text))
    except ValueError:
        return str(user_id(text))


def posix_id(text: str) -> int | str:
    """A uid or gid: a whole number from 0 (the server refuses 0 unless the cluster allows root jobs), or `auto`."""
    if text == "auto":
        return text
    if not text.isdigit() or int(text) > MAX_POSIX_ID:
        raise argparse.ArgumentTypeError(f"{text!r}: a uid or gid is a whole number from 0 to {MAX_POSIX_ID}, or auto")
    return int(text)


def password(args: argparse.Namespace) -> str:
    if getattr(args, "password_stdin", False):
        return sys.stdin.readline().rstrip("\n")
    return getpass.getpass("password: ")


def org_create(args: argparse.Namespace, client: Client) -> Any:
    return client.post("/v4/organizations", {"name": args.name})


def org_list(args: argparse.Namespace, client: Client) -> Any:
    return named(client.get("/v4/organizations")["organizations"], args.output, {"owners": "owner_names"})


def org_show(args: argparse.Namespace, client: Client) -> Any:
    answer = client.get(f"/v4/organizations/{args.org}")
    return named([answer], args.output, {"owners": "owner_names"})[0]


def org_priority(args: argparse.Namespace, client: Client) -> Any:
    return client.put(f"/v4/organizations/{args.org}/priority", {"priority": args.priority})


def group_create(args: argparse.Namespace, client: Client) -> Any:
    return client.post(f"/v4/organizations/{args.org}/groups", {"name": args.name})


def group_list(args: argparse.Namespace, client: Client) -> Any:
    return named(client.get(f"/v4/organizations/{args.org}/groups")["groups"], args.output, GROUP_NAMES)


def group_show(args: argparse.Namespace, client: Client) -> Any:
    return named([client.get(f"/v4/groups/{args.group}")], args.output, GROUP_NAMES)[0]


def group_update(args: argparse.Namespace, client: Client) -> Any:
    """Priority, gid and preempt-list changes in one command; the current list comes from the server."""
    answers = {}
    if args.gid is not None:
        answers["gid"] = client.put(f"/v4/groups/{args.group}/gid", {"gid": args.gid})["gid"]
    if args.priority is not None:
        answers["priority"] = client.put(f"/v4/groups/{args.group}/priority", {"priority": args.priority})["priority"]
    if args.preempt or args.no_preempt:
        current = client.get(f"/v4/groups/{args.group}").get("preempt", [])
        wanted = [g for g in dict.fromkeys([*current, *args.preempt]) if g not in set(args.no_preempt)]
        answers["preempt"] = client.put(f"/v4/groups/{args.group}/preempt", {"groups": wanted})["preempt"]
        if args.output == "table":  # the list as it stands, by name
            answers["preempt"] = named([client.get(f"/v4/groups/{args.group}")], "table", PREEMPT)[0]["preempt"]
    return answers or named([client.get(f"/v4/groups/{args.group}")], args.output, GROUP_NAMES)[0]


def org_members(args: argparse.Namespace, client: Client) -> Any:
    """An organization's members: role, priority and groups (by name in a table)."""
    users = client.get(f"/v4/organizations/{args.org}/users")["users"]
    if args.output != "table":
        return users
    return [{"username": u["username"], "role": u["role"], "priority": u["priority"],
             "groups": u.get("group_names") or u.get("groups") or []} for u in users]


def group_members(group: str, output: str, client: Client) -> Any:
    """A group's members with their role in it and their own priority (the user term of the priority expression),
    beside the group's and its organization's, which every member's work shares."""
    found = client.get(f"/v4/groups/{group}")
    users = {u["id"]: u for u in client.get(f"/v4/organizations/{found['organization_id']}/users")["users"]}
    org = client.get(f"/v4/organizations/{found['organization_id']}")
    rows = [{"user_id": uid, "username": users.get(uid, {}).get("username", uid), "role": role,
             "priority": users.get(uid, {}).get("priority"), "group_priority": found["priority"],
             "organization_priority": org["priority"]} for uid, role in found["members"].items()]
    return rows if output != "table" else [{k: v for k, v in r.items() if k != "user_id"} for r in rows]


def group_member(args: argparse.Namespace, client: Client) -> Any:
    """`member GROUP USER [--remove]` changes a membership; `member list GROUP` lists them (a group is never named
    `list`: it is an id or ORG/NAME)."""
    try:
        if args.group == "list":
            return group_members(group_ref(args.user), args.output, client)
        group, user = group_ref(args.group), user_ref(args.user)
    except argparse.ArgumentTypeError as error:
        fail(str(error))
    path = f"/v4/groups/{group}/members/{user}"
    if args.remove:
        return client.delete(path)
    return client.put(path, {"role": args.role})


def group_explainer(args: argparse.Namespace, client: Client) -> Any:
    path = f"/v4/groups/{args.group}/explainers/{args.user}"
    return client.delete(path) if args.revoke else client.put(path, {})


def user_create(args: argparse.Namespace, client: Client) -> Any:
    body = {"username": args.username, "email": args.email, "password": password(args), "role": args.role}
    return client.post(f"/v4/organizations/{args.org}/users", body)


def user_list(args: argparse.Namespace, client: Client) -> Any:
    return named(client.get(f"/v4/organizations/{args.org}/users")["users"], args.output, {"groups": "group_names"})


def user_show(args: argparse.Namespace, client: Client) -> Any:
    return named([client.get(f"/v4/users/{args.user}")], args.output, {"groups": "group_names"})[0]


def user_update(args: argparse.Namespace, client: Client) -> Any:
    """A cluster admin sets a user's uid (its jobs run as it on root agents); no option: show the user."""
    answers = {}
    if args.uid is not None:
        answers["uid"] = client.put(f"/v4/users/{args.user}/uid", {"uid": args.uid})["uid"]
    if args.priority is not None:
        answers["priority"] = client.put(f"/v4/users/{args.user}/priority", {"priority": args.priority})["priority"]
    return answers or user_show(args, client)


def user_priority(args: argparse.Namespace, client: Client) -> Any:
    return client.put(f"/v4/users/{args.user}/priority", {"priority": args.priority})


def user_whoami(args: argparse.Namespace, client: Client) -> Any:
    return named([client.get("/v4/auth/whoami")], args.output, {"groups": "group_names"})[0]


def user_password(args: argparse.Namespace, client: Client) -> Any:
    """Change your own password: the current one, then the new one (two lines on stdin with --password-stdin)."""
    if args.password_stdin:
        current, new = sys.stdin.readline().rstrip("\n"), sys.stdin.readline().rstrip("\n")
    else:
        current, new = getpass.getpass("current password: "), getpass.getpass("new password: ")
    return client.post("/v4/users/me/password", {"current_password": current, "new_password": new})


def user_unlock(args: argparse.Namespace, client: Client) -> Any:
    return client.post(f"/v4/users/{args.user}/unlock", {})


def user_logout(args: argparse.Namespace, client: Client) -> Any:
    return client.post("/v4/auth/logout", {})


def user_revoke(args: argparse.Namespace, client: Client) -> Any:
    return client.post("/v4/auth/revoke", {"jti": args.jti, "reason": args.reason})


def leaf(sub: Any, common: argparse.ArgumentParser, name: str, handler: Any, text: str,
         *positionals: tuple[str, Any], columns: list[str] | None = None,
         wide: list[str] | None = None) -> argparse.ArgumentParser:
    p = sub.add_parser(name, parents=[common], help=text)
    for argument, kind in positionals:
        p.add_argument(argument, type=kind)
    p.set_defaults(handler=handler, columns=columns, wide_columns=wide)
    return p


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    org = commands.add_parser("org", help="organizations").add_subparsers(dest="action", metavar="ACTION",
                                                                           required=True)
    leaf(org, common, "create", org_create, "create an organization (cluster admin)", ("name", str))
    leaf(org, common, "list", org_list, "organizations you can see (owners by name; -o json keeps their ids)",
         columns=["id", "name", "priority", "owners"], wide=[])
    leaf(org, common, "show", org_show, "one organization", ("org", org_ref))
    leaf(org, common, "priority", org_priority, "set an organization's priority (cluster admin)",
         ("org", org_ref), ("priority", int))
    member = org.add_parser("member", help="an organization's members").add_subparsers(
        dest="member_action", metavar="ACTION", required=True)
    leaf(member, common, "list", org_members, "its members with each one's role, priority and groups",
         ("org", org_ref), columns=["username", "role", "priority", "groups"], wide=[])
    group = commands.add_parser("group", help="groups: priority, preempt lists, members").add_subparsers(
        dest="action", metavar="ACTION", required=True)
    leaf(group, common, "create", group_create, "create a group in an organization", ("org", org_ref), ("name", str))
    leaf(group, common, "list", group_list,
         "an organization's groups, preempt lists by name (-o wide adds gid, members and roles; -o json keeps ids)",
         ("org", org_ref), columns=["id", "name", "priority", "preempt"], wide=["gid", "members"])
    leaf(group, common, "show", group_show, "one group: priority, gid, preempt list and members", ("group", group_ref))
    p = leaf(group, common, "update", group_update, "change a group's priority, gid or preempt list",
             ("group", group_ref))
    p.add_argument("--priority", type=int)
    p.add_argument("--gid", type=posix_id,
                   help="the POSIX gid its members' jobs run with, or auto: the next free one (cluster admin)")
    p.add_argument("--preempt", action="append", default=[], type=group_ref, metavar="G2",
                   help="allow this group to preempt G2 (repeatable)")
    p.add_argument("--no-preempt", action="append", default=[], type=group_ref, metavar="G2",
                   help="stop this group preempting G2 (repeatable)")
    p = leaf(group, common, "member", group_member,
             "GROUP USER: add (or --remove) a member; list GROUP: its members with each one's priority",
             ("group", str), ("user", str), columns=["username", "role", "priority", "group_priority",
                                                      "organization_priority"], wide=[])
    p.add_argument("--role", default="member", choices=["member", "group_owner"])
    p.add_argument("--remove", action="store_true")
    p = leaf(group, common, "explainer", group_explainer,
             "let a user ask why any of the group's work waits (explain_allocation; organization owners)",
             ("group", group_ref), ("user", user_ref))
    p.add_argument("--revoke", action="store_true", help="take the grant back")
    user = commands.add_parser("user", help="user accounts").add_subparsers(dest="action", metavar="ACTION",
                                                                             required=True)
    p = leaf(user, common, "create", user_create, "create an account (password asked for, or --password-stdin)",
             ("org", org_ref), ("username", str))
    p.add_argument("--email", required=True)
    p.add_argument("--role", default="user", choices=["user", "org_owner", "cluster_admin"])
    p.add_argument("--password-stdin", action="store_true")
    leaf(user, common, "list", user_list, "an organization's users (-o wide adds their uid and groups, by name)",
         ("org", org_ref), columns=["id", "username", "email", "role", "priority"], wide=["uid", "groups", "disabled"])
    leaf(user, common, "show", user_show, "one account: role, priority, uid and groups", ("user", user_ref))
    p = leaf(user, common, "update", user_update, "change a user's uid (cluster admin) or priority", ("user", user_ref))
    p.add_argument("--uid", type=posix_id,
                   help="the POSIX uid its jobs run as on root agents, or auto: the next free one (cluster admin)")
    p.add_argument("--priority", type=int)
    leaf(user, common, "priority", user_priority, "set a user's priority", ("user", user_ref), ("priority", int))
    leaf(user, common, "whoami", user_whoami, "who your token speaks for")
    p = leaf(user, common, "password", user_password, "change your own password")
    p.add_argument("--password-stdin", action="store_true", help="read the current and the new password from stdin")
    leaf(user, common, "unlock", user_unlock, "lift a login lock early (admins, organization owners)", ("user", user_ref))
    leaf(user, common, "logout", user_logout, "revoke the token you are using")
    p = leaf(user, common, "revoke", user_revoke, "revoke any token by its id (cluster admin)", ("jti", str))
    p.add_argument("--reason", required=True)

"""`roving catalog ...`: application templates from catalog sources, filled in with values and started.

`source add|list|refresh|remove` manage where templates come from (a folder on the control plane's host, or a git
repository), for a group, an organization or the whole cluster. `list` searches, `show` gives a template's inputs
by display category, `render NAME --values FILE` prints the Fuzzfile the server renders, `start` submits it.
A values file is the catalog's own format (`values: [{name, <kind>_value}]`) or a plain `NAME: value` mapping;
`--set NAME=VALUE` adds to it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

from api.cli import catalog_refresh
from api.cli.catalog_refresh import find_source, refreshed
from api.cli.client import ApiError, Client
from api.cli.completion import FILES
from api.cli.output import table
from api.cli.progress import Ticker, for_people

SOURCE_COLUMNS = ["name", "scope", "owner", "kind", "location", "ref", "added_by", "added_at"]
LIST_COLUMNS = ["key", "category", "title", "description"]
INPUT_COLUMNS = ["name", "kind", "default", "display_name"]


class Usage(Exception):
    """Bad usage found before asking the API: printed, exit 2."""


def values_of(args: argparse.Namespace) -> dict[str, Any]:
    from domain.catalog import CatalogError, read_values

    given: dict[str, Any] = {}
    if args.values:
        try:
            text = sys.stdin.read() if args.values == "-" else Path(args.values).read_text()
        except (OSError, UnicodeDecodeError) as error:
            raise Usage(f"--values: cannot read {args.values} ({error})") from None
        try:
            given = read_values(text, "--values")
        except CatalogError as error:
            raise Usage(str(error)) from None
    for entry in args.set or []:
        name, sep, value = entry.partition("=")
        if not sep or not name:
            raise Usage(f"--set: expected NAME=VALUE, got {entry!r}")
        given[name] = value
    return given


def named(args: argparse.Namespace) -> tuple[str, str]:
    """(template name, source) from NAME or SOURCE/NAME and --source."""
    source, _, name = args.name.rpartition("/")
    return name, args.source or source


def template_path(name: str, action: str = "") -> str:
    return f"/v4/catalog/templates/{quote(name, safe='')}{action}"


def add_source(args: argparse.Namespace, client: Client) -> Any:
    body = {"name": args.name, "location": args.location, "kind": args.kind or "", "ref": args.ref or "",
            "scope": args.scope, "owner": args.owner or ""}
    git = args.kind == "git" or (args.kind is None and not args.location.startswith("/"))
    with Ticker(f"checking {args.location}" if git else f"reading {args.location}", for_people(args)):
        added = client.post("/v4/catalog/sources", body)
    if git and for_people(args):  # its first clone now, its progress shown, rather than stalling the next listing
        try:
            why = refreshed(client, added, True)["error"]
        except ApiError as error:  # added all the same: the listing reads it when it can
            why = str(error)
        if why:
            print(f"warning: catalog source {added['name']} could not be read yet: {why}", file=sys.stderr)
    return added


def fetching(args: argparse.Namespace) -> Ticker:
    """The server reads each git source's checkout, fetching it when older than its refresh time: that can take a
    while on a large repository, so a person sees how long it has waited."""
    return Ticker("reading catalog sources (fetching git sources)", for_people(args))


def list_sources(args: argparse.Namespace, client: Client) -> Any:
    return client.get("/v4/catalog/sources")["sources"]


def remove_source(args: argparse.Namespace, client: Client) -> Any:
    return client.delete(f"/v4/catalog/sources/{find_source(args, client)['id']}")


def list_templates(args: argparse.Namespace, client: Client) -> Any:
    with fetching(args):
        answer = client.get("/v4/catalog", q=" ".join(args.query) or None, category=args.category)
    for source in answer["sources"]:
        if source["error"]:
            print(f"warning: catalog source {source['name']} ({source['scope']}) could not be read: {source['error']}",
                  file=sys.stderr)
        for problem in source["problems"]:
            print(f"warning: catalog source {source['name']}: {problem['path']}: {problem['message']}", file=sys.stderr)
    if args.output != "table":
        return answer
    return [{**t, "title": t["display_name"], "description": first_line(t["description"])} for t in answer["templates"]]


def first_line(text: str) -> str:
    line = next((x.strip() for x in text.splitlines() if x.strip()), "")
    return line if len(line) <= 80 else line[:77] + "..."


def show(args: argparse.Namespace, client: Client) -> Any:
    name, source = named(args)
    with fetching(args):
        found = client.get(template_path(name), source=source or None)
    if args.output != "table":
        return found
    print(f"name: {found['key']}\ntitle: {found['display_name']}\nscope: {found['scope']}")
    if found["category"]:
        print(f"category: {found['category']}")
    if found["description"]:
        print("description:\n  " + found["description"].replace("\n", "\n  "))
    for group in found["groups"]:
        print(f"\n[{group['display_category']}]")
        print(table(group["inputs"], INPUT_COLUMNS))
    return None


def render(args: argparse.Namespace, client: Client) -> Any:
    try:
        name, source = named(args)
        body = {"values": values_of(args), "source": source}
    except Usage as error:
        print(f"roving catalog: {error}", file=sys.stderr)
        return 2
    with fetching(args):
        answer = client.post(template_path(name, ":render"), body)
    warn(answer)
    if args.output != "table":
        return answer
    sys.stdout.write(answer["fuzzfile"] if answer["fuzzfile"].endswith("\n") else answer["fuzzfile"] + "\n")
    return None


def start(args: argparse.Namespace, client: Client) -> Any:
    try:
        name, source = named(args)
        body = {"values": values_of(args), "source": source, "name": args.name_ or ""}
    except Usage as error:
        print(f"roving catalog: {error}", file=sys.stderr)
        return 2
    with fetching(args):
        answer = client.post(template_path(name, ":start"), body)
    warn(answer)
    if args.watch:
        from api.cli.workflow import watch

        return watch(client, answer["id"])
    return {"id": answer["id"], "name": answer["name"], "template": answer["template"]}


def warn(answer: dict[str, Any]) -> None:
    for warning in answer.get("warnings", []):
        print(f"warning: {warning['path']}: {warning['message']}", file=sys.stderr)


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    group = commands.add_parser("catalog", help="application templates: search, render and start them",
                                description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = group.add_subparsers(dest="action", metavar="ACTION", required=True)
    sources = sub.add_parser("source", help="where templates come from").add_subparsers(dest="source_action",
                                                                                         metavar="ACTION", required=True)
    p = sources.add_parser("add", parents=[common], help="add a folder or git repository of templates",
                           description="A folder (an absolute path on the control plane's host; cluster admins only) "
                                       "or a git repository of NAME.template.yaml with NAME.values.yaml beside them.")
    p.add_argument("name", metavar="NAME", help="the source's name (lower-case letters, digits and -)")
    p.add_argument("location", metavar="LOCATION", help="/path/on/the/server, or a repository URL")
    p.add_argument("--kind", choices=["folder", "git"], help="default: folder for an absolute path, else git")
    p.add_argument("--ref", help="git: the branch or tag to follow (default: the repository's HEAD)")
    p.add_argument("--scope", choices=["group", "organization", "cluster"], default="group",
                   help="who sees it: a group's members (default), an organization's, or everyone")
    p.add_argument("--owner", help="the group (id, or name in your organization) or organization (id or name); "
                                   "default: the one group you own, or your organization")
    p.set_defaults(handler=add_source)
    p = sources.add_parser("list", parents=[common], help="the sources you can see")
    p.set_defaults(handler=list_sources, columns=SOURCE_COLUMNS)
    catalog_refresh.register(sources, common)
    p = sources.add_parser("remove", parents=[common], help="remove a source (its managers only)")
    p.add_argument("source", metavar="NAME", help="the source's name or id")
    p.add_argument("--scope", choices=["group", "organization", "cluster"], help="when several sources share NAME")
    p.add_argument("--owner", help="when several sources share NAME: their owner's name or id")
    p.set_defaults(handler=remove_source)
    p = sub.add_parser("list", parents=[common], help="templates you can use, searched by words",
                       description="Templates from every source you can see. Words search names, titles, "
                                   "descriptions, categories, tags and inputs. A source that cannot be read now is "
                                   "named on standard error; the others' templates are still listed.")
    p.add_argument("query", nargs="*", metavar="WORD")
    p.add_argument("--category", help="only templates of this category (or with inputs in this display category)")
    p.set_defaults(handler=list_templates, columns=LIST_COLUMNS)
    p = sub.add_parser("show", parents=[common], help="a template's description and inputs by display category")
    p.add_argument("name", metavar="NAME", help="the template's name, or SOURCE/NAME")
    p.add_argument("--source", help="the source, when several have NAME")
    p.set_defaults(handler=show)
    for name, handler, text in (("render", render, "print the Fuzzfile the values make (nothing is started)"),
                                ("start", start, "render and submit the Fuzzfile as a workflow")):
        p = sub.add_parser(name, parents=[common], help=text)
        p.add_argument("name", metavar="NAME", help="the template's name, or SOURCE/NAME")
        p.add_argument("--values", metavar="FILE", help="values (YAML): the catalog's values format or NAME: value; "
                                                        "- reads standard input").complete = FILES
        p.add_argument("--set", action="append", metavar="NAME=VALUE", help="a value (after --values)")
        p.add_argument("--source", help="the source, when several have NAME")
        if name == "start":
            p.add_argument("--name", dest="name_", metavar="WORKFLOW", help="the workflow's name (default: NAME)")
            p.add_argument("--watch", action="store_true", help="show stage progress until the workflow ends")
        p.set_defaults(handler=handler)

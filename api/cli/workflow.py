"""`roving workflow ...`: start, list, describe, events, log, why, stop, resubmit, retry and validate workflows.

On a federated control plane describe, events, log and why take any cluster's workflow id; an answer from
another cluster says which (and, on standard error, when what the hub holds of it is stale).
"""

from __future__ import annotations

import argparse
import codecs
import json
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from api.cli import pages, resubmit
from api.cli.client import Client
from api.cli.completion import FILES
from api.cli.output import fail, render, table
from api.cli.progress import paced
from api.cli.short_ids import resolving
from api.cli.stage_describe import one_stage, stage_rows

ENDED = ("FINISHED", "FAILED", "CANCELED")
ID_HELP = "the workflow's id, or its first characters (as the UI shows 8) when no other visible id starts so"
LIST_PAGE = 500  # rows asked of the API per request while `workflow list` pages through
LIST_DEFAULT = 100
SPANS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
STAGE_COLUMNS = ["name", "kind", "status", "attempts", "exit_code", "node", "reason"]


def read_file(path: str) -> str:
    try:
        return sys.stdin.read() if path == "-" else Path(path).read_text()
    except OSError as error:
        fail(f"cannot read {path}: {error.strerror}")
        raise


def located(problem: dict[str, str]) -> str:
    """`jobs.a.image: required`, or the message alone for a problem of the whole file (invalid YAML)."""
    return f"{problem['path']}: {problem['message']}" if problem.get("path") else problem["message"]


def start(args: argparse.Namespace, client: Client) -> Any:
    options = {"project": args.project, "priority": args.priority, "preemptible": args.preemptible,
               "strategy": args.strategy}
    if args.preset:
        from api.cli.preset import Refused, find
        from domain.presets import PresetError, expand

        try:
            options = expand(find(args.preset, client)[0], options)
        except (Refused, PresetError) as error:
            fail(f"--preset: {error}")
    body = {"name": args.name or Path(args.file).stem, "definition": read_file(args.file),
            "priority": options.get("priority") or 0, "preemptible": options.get("preemptible"),
            "endpoint_strategy": options.get("strategy"), "project": options.get("project"),
            "annotations": options.get("annotations")}
    answer = client.post("/v4/workflows", {k: v for k, v in body.items() if v is not None})
    for warning in answer.get("warnings", []):
        print(f"warning: {located(warning)}", file=sys.stderr)
    if args.watch:
        return watch(client, answer["id"])
    return {"id": answer["id"]}


def watch(client: Client, workflow_id: str, interval: float = 1.0) -> int:
    """Until the workflow ends: on a terminal, the stage table redrawn in place; elsewhere (a pipe, a CI log) one
    line per change only. Exit 0 if it finished, 1 otherwise."""
    shown, seen = 0, Transitions()
    while True:
        detail = client.get(f"/v4/workflows/{workflow_id}")
        if sys.stdout.isatty():
            text = f"workflow {detail['name']} ({workflow_id}): {detail['status']}\n" + table(detail["stages"],
                                                                                            STAGE_COLUMNS)
            text += "".join(f"\n  {stage}: {line}" for stage, line in under_way(client, workflow_id, detail).items())
            if shown:
                sys.stdout.write(f"\x1b[{shown}F\x1b[J")
            print(text, flush=True)
            shown = text.count("\n") + 1
        else:
            for line in seen.changes(detail):
                print(line, flush=True)
        if detail["status"] in ENDED:
            return 0 if detail["status"] == "FINISHED" else 1
        time.sleep(interval)


PROGRESS = ("Workflow.ImageProgressed", "Workflow.TransferProgressed")  # the agent's "pulling IMAGE: 2 of 5 blobs"


def under_way(client: Client, workflow_id: str, detail: dict[str, Any]) -> dict[str, str]:
    """Each stage still getting ready (image pull, ingress): the newest progress line its node told."""
    waiting = {s["name"] for s in detail["stages"] if s["status"] in ("STARTED", "READY")}
    if not waiting:
        return {}
    told: dict[str, list[tuple[str, str]]] = {}
    for event in pages.rows(client, f"/v4/workflows/{workflow_id}/events", "events"):
        if event["type"] in PROGRESS and event.get("stage") in waiting:
            told.setdefault(event["stage"], []).append((event.get("time") or "", event["message"]))
    return {stage: paced(lines) for stage, lines in told.items()}


class Transitions:
    """What changed since the last look: the workflow's status and each stage's status, node and exit code."""

    def __init__(self) -> None:
        self.last: dict[str, tuple] = {}

    def changes(self, detail: dict[str, Any]) -> list[str]:
        now, lines = time.strftime("%H:%M:%S"), []
        if self.last.get("") != (detail["status"],):
            self.last[""] = (detail["status"],)
            lines.append(f"{now}  workflow {detail['name']}: {detail['status']}")
        for stage in detail["stages"]:
            state = tuple(stage.get(k) for k in ("status", "node", "exit_code"))
            if self.last.get("stage:" + stage["name"]) != state:
                self.last["stage:" + stage["name"]] = state
                status, node, code = state
                lines.append(f"{now}  {stage['name']}: {status}" + (f" on {node}" if node else "")
                             + (f" (exit {code})" if code is not None else ""))
        return lines


def list_workflows(args: argparse.Namespace, client: Client) -> Any:
    """Newest first (unless --order-by), page by page until --limit rows; --watch prints it again every few seconds."""
    if args.watch:
        return watch_list(args, client)
    rows = listed(args, client)
    if args.output != "table":
        return rows
    return [{**r, **owner_names(r), "project": (r.get("owner") or {}).get("project") or None,
             "stages": f"{r.get('stages_ended', 0)}/{r.get('stage_count', 0)}"} for r in rows]


def listed(args: argparse.Namespace, client: Client) -> list[dict[str, Any]]:
    """The list's pages, following the API's `next` cursor until --limit rows (0: every row) or the last page."""
    rows: list[dict[str, Any]] = []
    after = None
    while True:
        size = min(LIST_PAGE, args.limit - len(rows)) if args.limit else LIST_PAGE
        answer = client.get("/v4/workflows", order_by=args.order_by, status=args.status, owner=args.user,
                            since=args.since, until=args.until, q=args.name, limit=size, next=after)
        rows += answer["workflows"]
        after = answer.get("next")
        if not after or (args.limit and len(rows) >= args.limit):
            return rows[:args.limit] if args.limit else rows


def watch_list(args: argparse.Namespace, client: Client) -> int:
    """The list again every --interval seconds until interrupted, the screen cleared first on a terminal."""
    watching, args.watch = args.watch, False
    try:
        while True:
            if sys.stdout.isatty():
                print("\033[H\033[2J", end="")
            if args.output == "table":  # -o json/yaml: each round is one document, nothing else
                print(f"every {args.interval:g}s: roving workflow list    {time.strftime('%Y-%m-%d %H:%M:%S')}")
            text = render(list_workflows(args, client), args.output, args.columns, headers=not args.no_headers)
            print(text or "(none)")
            sys.stdout.flush()
            time.sleep(args.interval)
    except KeyboardInterrupt:
        return 0
    finally:
        args.watch = watching


def count(text: str) -> int:
    """`--limit`: a whole number, 0 or more."""
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number, 0 or more, got {text!r}")
    return int(text)


def moment(text: str) -> str:
    """`--since`/`--until`: an ISO 8601 date or time, or a span ago (`90m`, `12h`, `7d`) as the API's UTC time."""
    unit = SPANS.get(text[-1:])
    if unit is not None and text[:-1].isdigit():
        return (datetime.now(UTC) - timedelta(seconds=int(text[:-1]) * unit)).isoformat(timespec="seconds")
    try:
        datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a date or time (2026-01-31, 2026-01-31T12:00) or a span ago "
                                         f"(90m, 12h, 7d), got {text!r}") from None
    return text


def owner_names(row: dict[str, Any]) -> dict[str, Any]:
    """The owner's user, group and organization by the names the API sent, else by their ids."""
    owner = row.get("owner") or {}
    return {key: row.get(key) or owner.get(f"{key}_id") or None for key in ("user", "group", "organization")}


def owner_line(detail: dict[str, Any]) -> str:
    """`alice (group ml, organization acme)`: the names the API knows, else the owner's ids."""
    names = owner_names(detail)
    rest = [f"{key} {names[key]}" for key in ("group", "organization") if names[key]]
    user = names["user"] or detail.get("submitted_by")
    return f"{user} ({', '.join(rest)})" if rest else str(user)


def other_cluster(answer: dict[str, Any]) -> None:
    """Say on standard error when the answer came from another cluster whose data the hub holds is stale."""
    if answer.get("stale"):
        age = answer.get("last_event_age_seconds")
        old = f"; its newest event is {age:.0f} s old" if age is not None else ""
        print(f"warning: cluster {answer['cluster']} is stale ({answer.get('error') or 'quiet'}){old}", file=sys.stderr)


def describe(args: argparse.Namespace, client: Client) -> Any:
    detail = client.get(f"/v4/workflows/{args.id}")
    if getattr(args, "stage", None):
        return one_stage(detail, args.stage, args.output, client)
    if args.output != "table":
        return detail
    other_cluster(detail)
    where = f"\ncluster: {detail['cluster']}" if "cluster" in detail else ""
    project = (detail.get("owner") or {}).get("project")
    where += f"\nproject: {project}" if project else ""
    print(f"id: {detail['id']}\nname: {detail['name']}\nstatus: {detail['status']}\nowner: {owner_line(detail)}{where}")
    return table(stage_rows(detail["stages"]), STAGE_COLUMNS)


def events(args: argparse.Namespace, client: Client) -> Any:
    if not args.follow:
        found: list[dict[str, Any]] = []
        for number, answer in enumerate(pages.answers(client, f"/v4/workflows/{args.id}/events")):
            if number == 0:
                other_cluster(answer)
            found += answer["events"]
        return found
    for line in client.stream(f"/v4/workflows/{args.id}/events?follow=true"):
        if line.startswith("data: "):
            event = json.loads(line[6:])
            if "message" in event:
                print(f"{event['time']}  {event.get('stage') or '-':<12} {event['message']}", flush=True)
    return None


def log(args: argparse.Namespace, client: Client, interval: float = 1.0) -> Any:
    """The stage's output; with --follow, what it writes next too, until its workflow ends (each look asks only for
    the bytes after those it has: api.http.routes.log_range)."""
    path = f"/v4/workflows/{args.id}/log/{args.stage}"
    structured = getattr(args, "output", "table") in ("json", "yaml")
    if not args.follow:
        text = client.get(path)
        if structured:  # one document, for scripts: -o json|yaml
            return {"workflow_id": args.id, "stage": args.stage, "output": text}
        sys.stdout.write(text)
        return None
    decoder = codecs.getincrementaldecoder("utf-8")("replace")  # a character cut between two reads stays whole
    written = 0
    while True:
        ended = client.get(f"/v4/workflows/{args.id}")["status"] in ENDED
        while piece := new_output(client, path, written):
            written += len(piece)
            _write_output(args, decoder.decode(piece), structured)
        if ended:  # read once more after the end was seen: output that landed just before it is not lost
            _write_output(args, decoder.decode(b"", final=True), structured)
            return None
        time.sleep(interval)


LOG_PAGE = 4 * 1024 * 1024  # bytes a look asks for at most (a long log comes in pages)


def new_output(client: Client, path: str, offset: int) -> bytes:
    """The log's bytes from `offset`; an older server that answers the whole log is cut here instead."""
    from api.cli.client import ApiError

    answer = client.send("GET", path, params={"offset": offset, "limit": LOG_PAGE})
    if answer.status_code >= 400:
        raise ApiError(client.refusal(answer))
    return answer.content if "Roving-Log-Offset" in answer.headers else answer.content[offset:offset + LOG_PAGE]


def _write_output(args: argparse.Namespace, text: str, structured: bool) -> None:
    if text and structured:  # followed: one JSON object a line per new piece of output
        sys.stdout.write(json.dumps({"workflow_id": args.id, "stage": args.stage, "output": text}) + "\n")
    elif text:
        sys.stdout.write(text)
    sys.stdout.flush()


def why(args: argparse.Namespace, client: Client) -> Any:
    if args.allocation:
        return client.get(f"/v4/workflows/{args.id}/allocations/{args.allocation}/explain")
    answer = client.get(f"/v4/workflows/{args.id}/why", all="true" if args.all else None)
    other_cluster(answer)
    return answer["stages"]


def stop(args: argparse.Namespace, client: Client) -> Any:
    return client.request("PATCH", f"/v4/workflows/{args.id}:stop")


def revoke_token(args: argparse.Namespace, client: Client) -> Any:
    return client.post(f"/v4/workflows/{args.id}/token:revoke", {"reason": args.reason})


def validate(args: argparse.Namespace, client: Client) -> Any:
    """Parsed locally with the same parser the server uses, then (unless --offline) checked by the cluster: what
    submission would refuse and what this cluster would not do as written. Exit 1 when it has errors."""
    from api.cli.client import ApiError
    from domain.fuzzfile import parse_fuzzfile

    text = read_file(args.file)
    parsed = parse_fuzzfile(text)
    found = {"errors": [{"path": p.path, "message": p.message} for p in parsed.errors],
             "warnings": [{"path": p.path, "message": p.message} for p in parsed.warnings]}
    if not parsed.errors and not args.offline:
        try:
            found = client.post("/v4/workflows:validate", {"definition": text})
        except ApiError as error:
            print(f"note: checked locally only, not against the cluster: {error}", file=sys.stderr)
    for kind in ("warnings", "errors"):
        for problem in found[kind]:
            print(f"{kind[:-1]}: {located(problem)}", file=sys.stderr)
    if found["errors"]:
        return 1
    return {"valid": True, "file": args.file}


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    group = commands.add_parser("workflow", help="start, follow and inspect workflows")
    sub = group.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = sub.add_parser("start", parents=[common], help="submit a Fuzzfile")
    fuzzfile = p.add_argument("file", help="the Fuzzfile (YAML); - reads standard input")
    fuzzfile.complete = FILES  # shtab: complete file names
    p.add_argument("--name", help="workflow name (default: the file name)")
    p.add_argument("--priority", type=int, help="the workflow's own priority (0 or lower; default 0)")
    p.add_argument("--preemptible", action="store_true", default=None, help="let higher-priority work preempt it")
    p.add_argument("--project", metavar="PATH", help="the project its work counts toward (stands for the file's "
                                                     "`project:`)")
    p.add_argument("--preset", metavar="NAME", help="start with a preset's options (`roving preset list`); options "
                                                   "given here win; the preset's name and digest are recorded")
    p.add_argument("--strategy", choices=["ready", "start"],
                   help="taking over a persistent endpoint in use: ready (default) keeps the old service serving "
                        "until the new one passes its readiness probe; start cancels the old workflow at once")
    p.add_argument("--watch", action="store_true", help="show stage progress until the workflow ends")
    p.set_defaults(handler=start)
    p = sub.add_parser("list", parents=[common], help="list workflows you can see",
                       description="Workflows you can see. -o wide adds the owner's user, group and organization "
                                   "(by name; -o json keeps their ids), its project, stages ended/total and "
                                   "preemptible.")
    p.add_argument("--order-by", choices=["priority", "submitted", "-submitted", "name"],
                   help="the order (default: -submitted, newest first)")
    p.add_argument("--status", "--state", help="only workflows in this status (PENDING, STARTED, FINISHED, ...)")
    p.add_argument("-u", "--user", "--owner", help="only this user's workflows (a user name or id), as sacct -u")
    p.add_argument("-S", "--since", type=moment, help="only workflows submitted at or after this time (a date or "
                                                       "time, or a span ago: 12h, 7d), as sacct -S")
    p.add_argument("-E", "--until", type=moment, help="only workflows submitted before this time, as sacct -E")
    p.add_argument("--name", help="only workflows whose name holds this text (or whose id starts with it)")
    p.add_argument("--limit", type=count, default=LIST_DEFAULT, metavar="N",
                   help=f"at most N workflows, newest first (default {LIST_DEFAULT}; 0: every one, page by page)")
    p.add_argument("--watch", action="store_true", help="print the list again every --interval seconds (Ctrl-C stops)")
    p.add_argument("--interval", type=float, default=2.0, metavar="SECONDS", help="--watch's pause (default 2)")
    p.set_defaults(handler=list_workflows, columns=["id", "name", "status", "priority", "submitted_by", "submitted_at"],
                   wide_columns=["group", "organization", "project", "stages", "preemptible", "updated_at"])
    for name, handler, text in (("describe", describe, "its owner by name; stages, nodes, attempts, exit codes"),
                                ("stop", stop, "cancel a workflow and its running stages")):
        p = sub.add_parser(name, parents=[common], help=text)
        p.add_argument("id", help=ID_HELP)
        if name == "describe":
            p.add_argument("stage", nargs="?", help="one stage in full: its resources and its events")
        p.set_defaults(handler=resolving(handler))
    p = sub.add_parser("revoke-token", parents=[common], help="refuse the workflow's FB_WORKFLOW_TOKEN from now on",
                       description="Its running stages' token (FB_WORKFLOW_TOKEN) is refused from now on, and stages "
                                   "it starts later get none; the workflow itself runs on. Its owner or a cluster "
                                   "admin. (A token also ends when its workflow ends.)")
    p.add_argument("id", help=ID_HELP)
    p.add_argument("--reason", default="revoked by the workflow's owner", help="recorded with the revocation")
    p.set_defaults(handler=resolving(revoke_token))
    p = sub.add_parser("events", parents=[common], help="the workflow's activity, as sentences")
    p.add_argument("id", help=ID_HELP)
    p.add_argument("--follow", action="store_true", help="keep printing until the workflow ends")
    p.set_defaults(handler=resolving(events), columns=["time", "stage", "type", "message"])
    p = sub.add_parser("log", parents=[common], help="a stage's output")
    p.add_argument("id", help="the workflow's id (as `roving workflow list` shows it)")
    p.add_argument("stage", help="the stage to read: a job or service by name (hello), one task of an array as "
                                  "NAME[INDEX] ('shard[3]'); `roving workflow describe ID` lists them")
    p.add_argument("-f", "--follow", action="store_true", help="keep printing new output until the workflow ends")
    p.set_defaults(handler=resolving(log))
    p = sub.add_parser("why", parents=[common], help="why stages are waiting (or explain one allocation)")
    p.add_argument("id", help=ID_HELP)
    p.add_argument("allocation", nargs="?", help="explain this allocation in full")
    p.add_argument("--all", action="store_true", help="include stages that already run or ended")
    p.set_defaults(handler=resolving(why), columns=["stage", "reason", "detail", "allocation_id"])
    resubmit.register(sub, common, ID_HELP)
    p = sub.add_parser("validate", parents=[common], help="check a Fuzzfile without submitting it")
    p.add_argument("file").complete = FILES
    p.add_argument("--offline", action="store_true", help="only the Fuzzfile's own checks, without asking the cluster")
    p.set_defaults(handler=validate)

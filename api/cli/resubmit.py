"""`roving workflow resubmit ID [--edit | --file F]` and `roving workflow retry ID`: a workflow submitted again, as
Argo's `resubmit` and `retry`, each a new workflow of yours (the old one is untouched).

`resubmit` submits the same definition (whatever the workflow's state), or the one you edit: `--edit` opens the
Fuzzfile in $VISUAL or $EDITOR (else vi) and submits what you save; an unchanged file submits nothing, and a
refused edit is kept in a file named on standard error. `retry` submits an ended workflow's jobs that did not all
finish (what finished is not run again; what depended on it no longer waits).
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from api.cli.client import ApiError, Client
from api.cli.completion import FILES
from api.cli.short_ids import resolving

EDITED = "roving-resubmit-"


def edited(text: str, workflow_id: str) -> Path | None:
    """The file holding `text` as the person's editor saved it; None when it came back unchanged."""
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    with tempfile.NamedTemporaryFile("w", prefix=f"{EDITED}{workflow_id[:8]}-", suffix=".yaml", delete=False) as file:
        file.write(text)
    path = Path(file.name)
    try:
        done = subprocess.run([*shlex.split(editor), str(path)], check=False)
    except OSError as error:
        path.unlink(missing_ok=True)
        raise ApiError(f"cannot run the editor {editor!r} ($VISUAL, $EDITOR): {error.strerror}") from None
    if done.returncode != 0 or path.read_text() == text:
        path.unlink(missing_ok=True)
        return None
    return path


def submitted(client: Client, path: str, body: dict[str, Any], edit: Path | None = None) -> Any:
    """The server's answer; an edit it refused stays on disk, so the person can fix it and try again."""
    try:
        answer = client.post(path, body)
    except ApiError:
        if edit is not None:
            print(f"roving: your edit is kept in {edit}: fix it and run resubmit with --file {edit}", file=sys.stderr)
        raise
    if edit is not None:
        edit.unlink(missing_ok=True)
    for warning in answer.get("warnings", []):
        where = f"{warning['path']}: " if warning.get("path") else ""
        print(f"warning: {where}{warning['message']}", file=sys.stderr)
    return answer


def options(args: argparse.Namespace) -> dict[str, Any]:
    return {k: v for k, v in (("name", args.name), ("priority", args.priority)) if v is not None}


def resubmit(args: argparse.Namespace, client: Client) -> Any:
    body, edit = options(args), None
    if args.file:
        body["definition"] = sys.stdin.read() if args.file == "-" else Path(args.file).read_text()
    elif args.edit:
        edit = edited(client.get(f"/v4/workflows/{args.id}/definition")["definition"], args.id)
        if edit is None:
            print("roving: the definition came back unchanged: nothing resubmitted (without --edit it is submitted "
                  "again as it was)", file=sys.stderr)
            return 1
        body["definition"] = edit.read_text()
    answer = submitted(client, f"/v4/workflows/{args.id}:resubmit", body, edit)
    return follow(args, client, {"id": answer["id"], "resubmitted_from": args.id})


def retry(args: argparse.Namespace, client: Client) -> Any:
    answer = submitted(client, f"/v4/workflows/{args.id}:retry", options(args))
    return follow(args, client, {"id": answer["id"], "retry_of": answer["retry_of"], "jobs": ", ".join(answer["jobs"])})


def follow(args: argparse.Namespace, client: Client, answer: dict[str, Any]) -> Any:
    if args.watch:
        from api.cli.workflow import watch

        return watch(client, answer["id"])
    return answer


def register(sub: Any, common: argparse.ArgumentParser, id_help: str) -> None:
    p = sub.add_parser("resubmit", parents=[common], help="submit a workflow again as a new one, as it was or edited",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("id", help=id_help)
    how = p.add_mutually_exclusive_group()
    how.add_argument("--edit", action="store_true", help="edit its Fuzzfile in $VISUAL/$EDITOR first")
    how.add_argument("-f", "--file", help="submit this Fuzzfile instead of its own (- reads standard input)").complete = FILES
    add_options(p)
    p.set_defaults(handler=resolving(resubmit))
    p = sub.add_parser("retry", parents=[common], help="submit an ended workflow's jobs that did not finish, anew",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("id", help=id_help)
    add_options(p)
    p.set_defaults(handler=resolving(retry))


def add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--name", help="the new workflow's name (default: the old one's)")
    p.add_argument("--priority", type=int, help="the new workflow's priority (default: the old one's)")
    p.add_argument("--watch", action="store_true", help="show stage progress until the new workflow ends")

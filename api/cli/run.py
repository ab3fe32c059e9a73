"""`roving run [--volume SPEC]... [--image URI] -- COMMAND...`: one command as a one-job workflow, its output on
this terminal as it is written (stdout to stdout, stderr to stderr), and its exit code as `roving`'s own.

Exit codes: the job's own; 125 when the job never gave one (the workflow was refused after submission, canceled
before it ran, or its node was lost), saying why; 1 when the server refused the submission; 2 for bad usage.
Ctrl-C stops the workflow and exits 130. With -i, standard input (text, up to 256 KiB) is sent along and the
command reads it; it is sent whole with the submission, not streamed as typed.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any

import httpx

from api.cli.client import ApiError, Client, message_of
from api.cli.run_progress import GettingReady
from api.cli.run_spec import MAX_STDIN, STAGE, RunUsage, definition, parse_volume, unique

NO_EXIT = 125
ENDED = ("FINISHED", "FAILED", "CANCELED")
STREAMS = {1: "stdout", 2: "stderr"}
DEFAULT_IMAGE = "docker://alpine:3.20"


def usage(message: str) -> int:
    print(f"roving: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace, client: Client) -> Any:
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        return usage("run: give the command after --, e.g. roving run -- hostname")
    try:
        volumes = unique([parse_volume(text) for text in args.volume])
        stdin = read_stdin() if args.interactive else None
    except RunUsage as error:
        return usage(str(error))
    for volume in volumes:
        if volume.size is not None or volume.annotations:
            print(f"warning: --volume {volume.key}: size and annotations are not used by this cluster (its volumes "
                  "have no size limit or annotations); ignored", file=sys.stderr)
    body = {"name": args.name or f"run-{command[0].rsplit('/', 1)[-1]}"[:64],
            "definition": definition(command, args.image, volumes, args.env, args.cpus, args.memory, stdin)}
    answer = client.post("/v4/workflows", body)
    for warning in answer.get("warnings", []):
        print(f"warning: {warning['path']}: {warning['message']}", file=sys.stderr)
    workflow = answer["id"]
    if sys.stderr.isatty():
        print(f"roving: workflow {workflow}", file=sys.stderr)
    try:
        with GettingReady(client, workflow, sys.stderr.isatty()) as ready:
            stream_output(client, workflow, ready.stop)
        return exit_code(client, workflow)
    except KeyboardInterrupt:
        try:
            client.request("PATCH", f"/v4/workflows/{workflow}:stop")
            print(f"\nroving: stopped workflow {workflow}", file=sys.stderr)
        except ApiError as error:
            print(f"\nroving: could not stop workflow {workflow}: {error}", file=sys.stderr)
        return 130


def read_stdin() -> str:
    data = sys.stdin.buffer.read(MAX_STDIN + 1)
    if len(data) > MAX_STDIN:
        raise RunUsage(f"-i: standard input is over {MAX_STDIN // 1024} KiB; put larger input in the object store "
                       "(roving object put) and read it from there")
    try:
        return data.decode()
    except UnicodeDecodeError:
        raise RunUsage("-i: standard input is not UTF-8 text; put binary input in the object store "
                       "(roving object put)") from None


def stream_output(client: Client, workflow: str, began: Callable[[], None] = lambda: None) -> None:
    """The stage's output as it is written, until its log ends (api.http.routes.log_follow's frames); `began` is
    called before its first byte is written."""
    path = f"/v4/workflows/{workflow}/log/{STAGE}"
    try:
        with client.http.stream("GET", path, params={"follow": "true"}, timeout=httpx.Timeout(30.0, read=None)) as answer:
            if answer.status_code >= 400:
                answer.read()
                raise ApiError(f"{message_of(answer)} (HTTP {answer.status_code})")
            buffered = b""
            for piece in answer.iter_raw():
                began()
                buffered = write_frames(buffered + piece)
    except httpx.HTTPError as error:
        raise ApiError(f"lost the output of workflow {workflow}: {error}") from None


def write_frames(data: bytes) -> bytes:
    """Writes every whole frame in `data` to its stream; returns the rest (a frame cut across reads)."""
    while len(data) >= 8:
        size = int.from_bytes(data[4:8], "big")
        if len(data) < 8 + size:
            break
        out = sys.stderr if STREAMS.get(data[0]) == "stderr" else sys.stdout
        out.flush()
        out.buffer.write(data[8:8 + size])
        out.buffer.flush()
        data = data[8 + size:]
    return data


def exit_code(client: Client, workflow: str, timeout: float = 60.0) -> int:
    """The job's exit code once its workflow has ended (its log can end a moment before its exit is recorded)."""
    deadline = time.monotonic() + timeout
    while True:
        detail = client.get(f"/v4/workflows/{workflow}")
        if detail["status"] in ENDED:
            break
        if time.monotonic() > deadline:
            print(f"roving: workflow {workflow} is still {detail['status']}; its output ended", file=sys.stderr)
            return NO_EXIT
        time.sleep(0.2)
    stage: dict[str, Any] = next((s for s in detail["stages"] if s["name"] == STAGE), {})
    if stage.get("exit_code") is not None:
        code, reason = int(stage["exit_code"]), str(stage.get("reason") or "")
        if code and reason and not reason.startswith(("exited with code", "Failed: exit")):  # e.g. out of memory
            print(f"roving: the job ended: {reason}", file=sys.stderr)
        return code
    reason = stage.get("reason") or detail.get("canceled_reason") or detail["status"]
    print(f"roving: the job did not run to an exit code: {reason}", file=sys.stderr)
    return NO_EXIT


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    p = commands.add_parser("run", help="run one command as a job, its output here and its exit code as ours",
                            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--volume", "-v", action="append", default=[], metavar="SPEC",
                   help="[KEY=][REF:]MOUNT[,size=SIZE][,ANNOTATION=VALUE...]: a bare /path is an ephemeral volume, "
                        "NAME:/path your persistent volume NAME, volume://...:/path that reference (repeatable)")
    p.add_argument("--image", default=DEFAULT_IMAGE, metavar="URI",
                   help=f"the job's image (default {DEFAULT_IMAGE}; a node with the host runtime runs it on the node)")
    p.add_argument("--env", "-e", action="append", default=[], metavar="NAME=VALUE",
                   help="set a variable in the job (repeatable; secret://user/NAME values are resolved)")
    p.add_argument("--cpus", type=int, default=1, help="CPU cores for the job (default 1)")
    p.add_argument("--memory", metavar="SIZE", help="memory for the job, e.g. 2GiB (default: --cpus times the cluster's "
                        "scheduler.defaultMemoryPerCore, see `roving config get scheduler.defaultMemoryPerCore`; "
                        "when that is 0, as it is unless set, the job gets no memory limit)")
    p.add_argument("--name", help="the workflow's name (default run-COMMAND)")
    p.add_argument("-i", "--interactive", action="store_true",
                   help="send standard input along (text, up to 256 KiB, read before the job starts)")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND...", help="the command and its arguments")
    p.set_defaults(handler=run, output="table")

"""`roving`: parse the command line, call the API, print the answer; exit 0 ok, 1 refused, 2 bad usage."""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import os
import sys
from collections.abc import Callable, Sequence

from api.cli import (
    audit,
    catalog,
    completion,
    context,
    endpoints,
    federation,
    nodes,
    objects,
    preset,
    profile,
    project,
    provisioner,
    queue,
    run,
    secret,
    tenancy,
    volume,
    workflow,
)
from api.cli.client import ApiError, Client, context_renewer, current_context
from api.cli.output import FORMAT_HELP, FORMATS, render

PROCESSES: dict[str, tuple[str, str, str]] = {
    "up": ("api.up.main", "up_main", "start the whole local stack (NATS, control plane, local node agents)"),
    "api": ("api.up.main", "api_main", "run the HTTP API, read models and scheduler against ROVING_NATS_URL"),
    "scheduler": ("api.scheduler.main", "scheduler_main", "run the scheduler on its own"),
    "agent": ("api.agent.main", "agent_main", "run a node agent that registers this host and runs its work"),
    "federate": ("api.federate.main", "federate_main", "replicate clusters' logs into one federated stream"),
    "rotate-key": ("api.cli.rotate_key", "rotate_main", "sign new tokens with a new key (on the control plane's host)"),
    "mcp": ("api.mcp.main", "mcp_main", "serve the Model Context Protocol on stdio, as your context (for assistants)"),
}
OWN_PACKAGES = ("api", "domain", "projections", "adapters")
GROUPS = (workflow, run, queue, nodes, tenancy, secret, objects, profile, provisioner, project, preset, catalog, audit,
          endpoints, federation, context, completion, volume)
EXTRAS = {"mcp": "mcp"}  # a missing package -> the extra that brings it (the rest come with `server`)
DESCRIPTION = """Roving: an event-sourced control plane for HPC/AI clusters.

Every command talks to the HTTP API of the context in ~/.config/roving/config.yaml
(ROVING_API and ROVING_TOKEN override it). Exit codes: 0 success, 1 the server refused
(its message is printed), 2 bad usage."""


def common_options() -> argparse.ArgumentParser:
    """Options every command takes."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-o", "--output", choices=FORMATS, default="table", help=f"how to print the answer: {FORMAT_HELP}")
    common.add_argument("--no-headers", action="store_true",
                        help="table and wide: leave out the header line (and print nothing for an empty list)")
    return common


def version() -> str:
    """The installed distribution's version (a source tree that was never installed says so)."""
    try:
        return importlib.metadata.version("roving")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="roving", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"roving {version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (_, _, summary) in PROCESSES.items():
        commands.add_parser(name, help=summary, add_help=False)
    common = common_options()
    for group in GROUPS:
        group.register(commands, common)
    return parser


def run_process(name: str, argv: list[str]) -> int:
    """`up`, `api`, `scheduler`, `agent`, `federate`: imported only when asked for, with a clear error if absent."""
    module_name, function, _ = PROCESSES[name]
    try:
        entry: Callable[[list[str]], int] = getattr(importlib.import_module(module_name), function)
    except (ImportError, AttributeError) as error:
        print(f"roving {name}: {unavailable(error, f'{module_name}.{function}')}", file=sys.stderr)
        return 1
    return int(entry(argv) or 0)


def unavailable(error: Exception, entry: str) -> str:
    """Why a process cannot start; a missing package of the server's names the extra that brings it."""
    missing = error.name if isinstance(error, ModuleNotFoundError) else None
    if missing and missing.split(".")[0] not in OWN_PACKAGES:
        extra = EXTRAS.get(missing.split(".")[0], "server")
        return (f"needs the {extra} extra's dependencies, which this installation lacks (no module {missing!r}); "
                f"install them with: pip install 'roving[{extra}]'")
    return f"not available in this installation ({entry}: {error})"


def execute(args: argparse.Namespace, client: Client | None = None) -> int:
    """Run a parsed command against the API and print its answer."""
    if client is None:
        found = current_context()
        renew = context_renewer(found["api"]) if found["refresh_token"] else None
        with Client(found["api"], found["token"], renew=renew) as own:
            return execute(args, own)
    wide = args.output == "wide"
    if wide:  # a handler shapes its rows for a person as for `table`; only the columns differ
        args.output = "table"
    try:
        result = args.handler(args, client)
    except ApiError as error:
        print(f"roving: {error}", file=sys.stderr)
        return 1
    if isinstance(result, int) and not isinstance(result, bool):
        return result
    if result is not None:
        text = render(result, "wide" if wide else args.output, getattr(args, "columns", None),
                      headers=not getattr(args, "no_headers", False), wide=getattr(args, "wide_columns", None))
        if text:
            print(text)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    try:
        try:
            return _main(argv)
        finally:
            sys.stdout.flush()
    except BrokenPipeError:  # the reader (head, less) went away: stop quietly, as other tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


DASH_VALUES = ("--order-by",)  # options whose values may start with "-" (e.g. -submitted: newest first)


def joined_values(argv: list[str]) -> list[str]:
    """`--order-by -submitted` as `--order-by=-submitted`: argparse would take the value for an option."""
    out: list[str] = []
    for arg in argv:
        if out and out[-1] in DASH_VALUES and arg.startswith("-") and not arg.startswith("--"):
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in PROCESSES:
        return run_process(argv[0], argv[1:])
    args = build_parser().parse_args(joined_values(argv))
    try:
        return execute(args)
    except KeyboardInterrupt:
        return 130


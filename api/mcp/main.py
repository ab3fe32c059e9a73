"""`roving mcp`: the Model Context Protocol over stdio (the official `mcp` SDK), acting as the caller's context.

It talks to the HTTP API with the current context's address and token (~/.config/roving/config.yaml, or
ROVING_API and ROVING_TOKEN), exactly as the CLI does, so an assistant can do what its user may and nothing more.
Standard output carries the protocol only; logs go to standard error.
"""

from __future__ import annotations

import argparse
import inspect
import logging
import sys
from typing import Any

from api.cli.client import Client, context_renewer, current_context
from api.mcp.tools import RovingTools  # needs the mcp extra: `roving` names it when missing

INSTRUCTIONS = """Roving runs workflows (Fuzzfiles: YAML with version v4, jobs and services) on an HPC/AI cluster.
Validate a Fuzzfile with workflow_validate before starting it. The catalog holds ready-made templates: find one
with catalog_list, read its inputs with catalog_show, then catalog_render or catalog_start it with values. Follow a
workflow with workflow_status, workflow_why (why stages wait) and workflow_logs."""

TOOLS = ("workflow_validate", "catalog_list", "catalog_show", "catalog_render", "catalog_start", "group_list",
         "workflow_start", "workflow_status", "workflow_why", "workflow_logs")


def build_server(tools: RovingTools) -> Any:
    """The MCP server with every tool; each tool's docstring is its description, its annotations its schema."""
    from mcp.server import MCPServer

    server = MCPServer("roving", instructions=INSTRUCTIONS, log_level="WARNING")
    for name in TOOLS:
        method = getattr(tools, name)
        server.add_tool(method, name=name, description=inspect.cleandoc(method.__doc__ or ""))
    return server


def mcp_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="roving mcp", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--api", help="the API's address (default: the current context's, or ROVING_API)")
    args = parser.parse_args(argv)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request on standard error helps nobody
    found = current_context()
    api = args.api or found["api"]
    renew = context_renewer(api) if found["refresh_token"] else None
    with Client(api, found["token"], renew=renew) as client:
        server = build_server(RovingTools(client))
        try:
            server.run("stdio")
        except KeyboardInterrupt:
            return 130
    return 0


if __name__ == "__main__":
    sys.exit(mcp_main(sys.argv[1:]))

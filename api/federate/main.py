"""`roving federate`: create the hub's federated stream over member clusters, and show how each member is doing.

    roving federate --hub nats://hub:4222 --member c1=c1 --member c2=c2 [--api c1=https://c1:8080 ...] [-o json]
    roving federate status --hub nats://hub:4222 [-o json]

Exit codes: 0 done (a member that is down is shown as unavailable, not as an error), 1 the hub could not
be reached or refused, 2 bad usage.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import nats.js.errors

from adapters.federation import Federation, FederationError, FederationStatus
from adapters.federation_members import Member
from api.usage import UsageError, UsageParser

HUB_ENV = "ROVING_FEDERATION_HUB"
COLUMNS = ("CLUSTER", "DOMAIN", "STATE", "LAG", "LAST SEEN", "MEMBER LAST", "DETAIL")


def build_parser() -> argparse.ArgumentParser:
    parser = UsageParser(prog="roving federate", description="Source every member cluster's stream into one hub stream.")
    parser.add_argument("action", nargs="?", choices=("create", "status"), default="create",
                        help="create (default): create or extend the federated stream; status: show members")
    parser.add_argument("--hub", default=os.environ.get(HUB_ENV),
                        help=f"the hub nats-server URL (default ${HUB_ENV})")
    parser.add_argument("--member", action="append", default=[], metavar="CLUSTER=DOMAIN",
                        help="a member cluster and its JetStream domain; repeat for each member")
    parser.add_argument("--api", action="append", default=[], metavar="CLUSTER=URL",
                        help="a member's control-plane URL, named in answers that send users there")
    parser.add_argument("--timeout", type=float, default=2.0, help="seconds to wait for each server answer")
    parser.add_argument("--replicas", type=int, choices=range(1, 6), metavar="1..5",
                        default=int(os.environ.get("ROVING_NATS_REPLICAS") or 1),
                        help="replicas of the federated stream on a clustered hub (default $ROVING_NATS_REPLICAS or 1)")
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table")
    return parser


def render_table(status: FederationStatus) -> str:
    rows = [COLUMNS]
    for m in status.members:
        detail = m.error or ("" if m.sourcing else "not sourced by the hub: run `roving federate --member ...`")
        rows.append((m.cluster, m.domain, m.state, "-" if m.lag is None else str(m.lag), str(m.last_seen_seq),
                     "-" if m.member_last_seq is None else str(m.member_last_seq), detail))
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS) - 1)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r[:-1], widths, strict=True)) + "  " + r[-1] for r in rows]
    head = f"{status.stream} on {status.hub}: {status.messages} events" if status.exists else \
        f"{status.stream} does not exist on {status.hub}: run `roving federate --hub URL --member CLUSTER=DOMAIN`"
    return "\n".join([head, *(line.rstrip() for line in lines)])


def api_urls(texts: list[str]) -> dict[str, str]:
    """`--api c1=https://c1:8080` -> {"c1": "https://c1:8080"}."""
    found = {}
    for text in texts:
        cluster, sep, url = text.partition("=")
        if not sep or not cluster.strip() or not url.strip():
            raise UsageError(f"--api {text!r}: write CLUSTER=URL, e.g. c1=https://c1.example:8080")
        found[cluster.strip()] = url.strip()
    return found


def federate_main(argv: list[str]) -> int:
    try:
        args = build_parser().parse_args(argv)
        if not args.hub:
            raise UsageError(f"no hub: give --hub nats://HOST:PORT or set {HUB_ENV}")
        urls = api_urls(args.api)
        members = [Member.parse(text) for text in args.member]
        unknown = sorted(set(urls) - {m.cluster for m in members})
        if unknown:
            raise UsageError(f"--api {unknown[0]}=...: {unknown[0]} is not a --member of this command")
        members = [Member(m.cluster, m.domain, urls.get(m.cluster)) for m in members]
        if args.action == "create" and not members:
            raise UsageError("no members: give --member CLUSTER=DOMAIN once for each member cluster")
        federation = Federation(args.hub, members, timeout=args.timeout, replicas=args.replicas)
    except (UsageError, ValueError) as error:
        print(f"roving federate: {error}", file=sys.stderr)
        return 2
    except SystemExit as exit_:  # --help
        return int(exit_.code or 0)
    try:
        if args.action == "create":
            federation.ensure()
        status = federation.status()
    except FederationError as error:
        print(f"roving federate: {error}", file=sys.stderr)
        return 1
    except nats.js.errors.APIError as error:
        print(f"roving federate: the hub refused: {error.description or error} "
              "(check that the hub runs JetStream with `domain: hub` and the member domains are right)",
              file=sys.stderr)
        return 1
    if args.output == "json":
        print(json.dumps(status.to_dict(), indent=2))
    else:
        print(render_table(status))
    return 0

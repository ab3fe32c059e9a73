"""Volumes' ingress and egress as stages of the workflow: one `ingress:VOLUME` stage before every step that
mounts the volume, one `egress:VOLUME` stage after every job that does.

A transfer stage is placed like a job (one core, no memory request) and runs on the node that holds the
volume: the workflow pins a volume to the node its first stage started on (see `Workflow.volume_nodes`).
"""

from __future__ import annotations

import msgspec

from domain.fuzzfile.schema import Transfer, Workflow

INGRESS, EGRESS = "ingress", "egress"
TRANSFER_KINDS = (INGRESS, EGRESS)
INGRESS_SCHEMES = ("http://", "https://", "s3://", "hf://", "object://")
EGRESS_SCHEMES = ("s3://", "https://", "http://", "object://")
EPHEMERAL = "volume://user/ephemeral"


class Move(msgspec.Struct, frozen=True, omit_defaults=True):
    """One file to move: `source` and `destination` URIs, the secret reference that opens the remote end."""

    source: str
    destination: str
    secret: str = ""


def transfer_stage_name(kind: str, volume: str) -> str:
    return f"{kind}:{volume}"


def moves(transfers: list[Transfer] | None) -> list[Move]:
    return [Move(t.source.uri, t.destination.uri, t.source.secret or t.destination.secret or "")
            for t in transfers or []]


def mounted_volumes(mounts: dict[str, str]) -> list[str]:
    """The volumes a stage mounts, each once, in the order of their mount paths."""
    return list(dict.fromkeys(mounts[path] for path in sorted(mounts)))


def ingress_volumes(workflow: Workflow) -> list[str]:
    return [name for name, v in (workflow.volumes or {}).items() if v.ingress]


def egress_volumes(workflow: Workflow) -> list[str]:
    return [name for name, v in (workflow.volumes or {}).items() if v.egress]


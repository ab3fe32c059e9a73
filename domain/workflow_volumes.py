"""Where a workflow's volumes live: the volumes a stage uses, those that pin it to one node, and why a start is refused.

An ephemeral volume lives on the node the first stage using it started on; a persistent one (bound at submission,
domain.volumes) is the provisioner's directory, which every node that may run the stage sees. The Workflow
aggregate (domain/workflow.py) keeps both maps, `volume_nodes` and `volume_bindings`, and asks these rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from domain.fuzzfile import Stage
from domain.fuzzfile.transfers import mounted_volumes


def volumes_of(spec: Stage) -> list[str]:
    """The volumes a stage uses: those it mounts, or the one its ingress or egress moves files for."""
    return [spec.volume] if spec.volume else mounted_volumes(spec.mounts)


def node_volumes(spec: Stage, bindings: Mapping[str, Any]) -> list[str]:
    """The volumes of `spec` that live on one node (ephemeral ones): a persistent volume pins no stage anywhere."""
    return [v for v in volumes_of(spec) if v not in bindings]


def volume_refusal(stage: str, spec: Stage, node: str, nodes: Mapping[str, str], bindings: Mapping[str, Any]) -> str | None:
    """Why `stage` cannot start on `node`: a volume it mounts lives on another node (None: no such volume)."""
    for volume in node_volumes(spec, bindings):
        if (held := nodes.get(volume, node)) != node:
            return f"{stage} mounts volume {volume}, which lives on node {held}, not {node}"
    return None


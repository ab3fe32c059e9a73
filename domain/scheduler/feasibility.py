"""Submission-time feasibility: reject a request no node of any definition could hold even when idle.

Definitions describe the nodes a provisioner can bring up, so this answers before any node exists.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from domain.quantities import human_bytes
from domain.scheduler.snapshot import Definition, NodeShape, QueuedAllocation


class Infeasible(msgspec.Struct, frozen=True, kw_only=True):
    request: dict[str, Any]
    largest_node: dict[str, Any] | None
    rejections: dict[str, str]

    def message(self) -> str:
        why = "; ".join(f"{d}: {r}" for d, r in self.rejections.items()) or "no definitions exist"
        return f"no node can ever hold this request ({why})"


def _rejection(a: QueuedAllocation, d: Definition, ignored: frozenset[str]) -> str | None:
    for name, value in sorted(a.annotations.items()):
        if name not in ignored and d.annotations.get(name) != value:
            return f"annotation {name}={value} not offered"
    segments = set(a.segments)
    if len(segments) > 1 or (segments and d.segment not in segments):
        return f"volumes need segment {', '.join(sorted(segments))}, definition is in {d.segment or '(none)'}"
    shapes = d.shapes or (d.shape,)
    if all(_shortage(a, shape) for shape in shapes):  # no node shape holds it: the closest one says why
        closest = max(shapes, key=lambda shape: (sum(min(shape.devices.get(n, 0), c) for n, c in a.devices.items()),
                                                 shape.cpu, shape.memory))
        return _shortage(a, closest)
    if a.nodes > d.max_nodes:
        return f"needs {a.nodes} nodes, maxNodes is {d.max_nodes}"
    return None


def _shortage(a: QueuedAllocation, shape: NodeShape) -> str | None:
    """What one node of this shape lacks for the request (None: it holds it), naming the node it compares with."""
    if a.cpu > shape.cpu:
        short = f"cpu {a.cpu} > {shape.cpu} per node"
    elif a.memory > shape.memory:
        short = f"memory {human_bytes(a.memory)} > {human_bytes(shape.memory)} per node"
    else:
        lacking = [(n, c) for n, c in sorted(a.devices.items()) if shape.devices.get(n, 0) < c]
        if not lacking:
            return None
        name, count = lacking[0]
        short = f"devices {name} {count} > {shape.devices.get(name, 0)} per node"
    return f"{short} ({shape_text(shape)})" if shape.node else short


def shape_text(shape: NodeShape) -> str:
    """`the GPU node local-gpu has cpu 2, memory 4 GiB, nvidia.com/gpu x1`: which node a comparison was made with."""
    kind = "the GPU node" if any("gpu" in name.lower() for name in shape.devices) else "node"
    devices = "".join(f", {name} x{count}" for name, count in sorted(shape.devices.items()))
    return f"{kind} {shape.node} has cpu {shape.cpu}, memory {human_bytes(shape.memory)}{devices}"


def check_feasible(request: QueuedAllocation, definitions: Iterable[Definition],
                   ignored_annotations: Iterable[str] = ()) -> Infeasible | None:
    """None when some definition could hold the request; otherwise why each one could not."""
    ignored = frozenset(ignored_annotations)
    definitions = list(definitions)
    rejections = {}
    for d in definitions:
        why = _rejection(request, d, ignored)
        if why is None:
            return None
        rejections[d.id] = why
    largest = max(definitions, key=lambda d: (d.shape.cpu, d.shape.memory), default=None)
    return Infeasible(
        request={"cpu": request.cpu, "memory": request.memory, "devices": dict(request.devices),
                 "nodes": request.nodes, "annotations": dict(request.annotations),
                 "segments": list(request.segments)},
        largest_node=None if largest is None else {
            "definition": largest.id, "node": largest.shape.node, "cpu": largest.shape.cpu, "memory": largest.shape.memory,
            "devices": dict(largest.shape.devices)},
        rejections=rejections)

"""Storage segments at submission: a stage may only mount volumes of one segment, and some node must provide it.

Placement (eligibility.py) then puts each stage only on a node of its volumes' segment; this refuses up front what
could never be placed, naming the volume and the segment.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from domain.fuzzfile.schema import Problem


def stage_segments(volumes: Iterable[str], segments: Mapping[str, str]) -> tuple[str, ...]:
    """The segments of the volumes a stage mounts (`segments`: volume -> segment, "" for none), sorted, once each."""
    return tuple(sorted({segments[v] for v in volumes if segments.get(v)}))


def segment_problems(steps: Iterable[tuple[str, list[str]]], segments: Mapping[str, str],
                     provided: set[str] | None) -> list[Problem]:
    """`steps`: (field path of a job or service, the volumes it mounts). `provided`: the segments registered nodes
    are in (None: not known, so only conflicts are checked)."""
    problems: list[Problem] = []
    if provided is not None:
        for volume, segment in sorted(segments.items()):
            if segment and segment not in provided:
                offered = ", ".join(sorted(s for s in provided if s)) or "none"
                problems.append(Problem(f"volumes.{volume}.reference",
                                        f"volume {volume} is in storage segment {segment!r}, which no node provides "
                                        f"(segments with nodes: {offered})"))
    for path, volumes in steps:
        found = {v: segments[v] for v in volumes if segments.get(v)}
        if len(set(found.values())) > 1:
            listed = ", ".join(f"{v} in {s!r}" for v, s in sorted(found.items()))
            problems.append(Problem(f"{path}.mounts", f"mounts volumes of different storage segments ({listed}); "
                                                      "a stage runs on one node, in one segment"))
    return problems

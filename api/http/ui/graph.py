"""A workflow's stage graph as inline SVG: one box per step in columns by dependency depth, coloured by status.

Drawn on the server (no script, nothing inline for the CSP to refuse): colours come from ui.css by class.
A task array is one box (`name ×N`) whose status is its most telling task's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from api.http.ui import render

WIDTH, HEIGHT, COLUMN_GAP, ROW_GAP, PAD = 170, 34, 56, 14, 8
LABEL = 22  # characters of a step's name shown in its box; the full name is in its tooltip
# A group of tasks shows the first of these its tasks are in: what needs attention before what is done.
PRECEDENCE = ("FAILED", "EVICTED", "PREEMPTED", "RUNNING", "STARTED", "READY", "PENDING", "CANCELED", "FINISHED")


def step_of(stage: str) -> str:
    return stage.split("[")[0]


def group_status(statuses: Sequence[str]) -> str:
    return next((s for s in PRECEDENCE if s in statuses), statuses[0] if statuses else "PENDING")


def depths(needs: Mapping[str, Sequence[str]]) -> dict[str, int]:
    """Each step's column: 0 without dependencies, else one past its deepest dependency (cycles cannot parse)."""
    found: dict[str, int] = {}

    def depth(step: str, seen: frozenset[str]) -> int:
        if step not in found:
            parents = [p for p in needs.get(step, ()) if p in needs and p not in seen]
            found[step] = 1 + max((depth(p, seen | {step}) for p in parents), default=-1)
        return found[step]

    for step in needs:
        depth(step, frozenset())
    return found


def stage_graph(stages: Sequence[Mapping[str, str]], needs: Mapping[str, Sequence[str]]) -> render.Html:
    """`stages`: the describe answer's stages (name, status); `needs`: each step's dependencies by step name."""
    groups: dict[str, list[str]] = {}
    for stage in stages:
        groups.setdefault(step_of(stage["name"]), []).append(str(stage["status"]))
    if not groups:
        return render.fill("graph", boxes=[])
    wanted = {step: [p for p in needs.get(step, ()) if p in groups] for step in groups}
    column = depths(wanted)
    rows: dict[int, int] = {}
    at: dict[str, tuple[int, int]] = {}
    for step in groups:
        col = column[step]
        at[step] = (PAD + col * (WIDTH + COLUMN_GAP), PAD + rows.get(col, 0) * (HEIGHT + ROW_GAP))
        rows[col] = rows.get(col, 0) + 1
    width = PAD * 2 + (max(column.values()) + 1) * (WIDTH + COLUMN_GAP) - COLUMN_GAP
    height = PAD * 2 + max(rows.values()) * (HEIGHT + ROW_GAP) - ROW_GAP
    edges = [edge(at[parent], at[step]) for step in groups for parent in wanted[step]]
    boxes = [box(step, statuses, at[step]) for step, statuses in groups.items()]
    return render.fill("graph", boxes=boxes, edges=edges, width=width, height=height, box_width=WIDTH,
                       box_height=HEIGHT)


def edge(source: tuple[int, int], target: tuple[int, int]) -> tuple[int, int, int, int, int]:
    """(x1, y1, middle, x2, y2): a curve from the right of the source box to the left of the target's."""
    x1, y1 = source[0] + WIDTH, source[1] + HEIGHT // 2
    x2, y2 = target[0], target[1] + HEIGHT // 2
    return x1, y1, (x1 + x2) // 2, x2, y2


def box(step: str, statuses: Sequence[str], place: tuple[int, int]) -> dict[str, object]:
    status = group_status(statuses)
    name = step if len(step) <= LABEL else step[: LABEL - 1] + "…"
    label = f"{name} ×{len(statuses)}" if len(statuses) > 1 else name
    return {"step": step, "status": status, "label": label, "x": place[0], "y": place[1]}

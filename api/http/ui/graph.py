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
        return render.Html('<p class="empty" id="stage-graph">No stages.</p>')
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
    edges = "".join(edge(at[parent], at[step]) for step in groups for parent in wanted[step])
    boxes = "".join(box(step, statuses, at[step]) for step, statuses in groups.items())
    return render.Html(f'<svg class="graph" id="stage-graph" role="img" aria-label="stage graph" '
                       f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">{edges}{boxes}</svg>')


def edge(source: tuple[int, int], target: tuple[int, int]) -> str:
    x1, y1 = source[0] + WIDTH, source[1] + HEIGHT // 2
    x2, y2 = target[0], target[1] + HEIGHT // 2
    middle = (x1 + x2) // 2
    return (f'<path class="edge" d="M{x1},{y1} C{middle},{y1} {middle},{y2} {x2 - 4},{y2}"/>'
            f'<path class="arrow" d="M{x2 - 8},{y2 - 4} L{x2},{y2} L{x2 - 8},{y2 + 4} z"/>')


def box(step: str, statuses: Sequence[str], place: tuple[int, int]) -> str:
    status = group_status(statuses)
    name = step if len(step) <= LABEL else step[: LABEL - 1] + "…"
    label = f"{name} ×{len(statuses)}" if len(statuses) > 1 else name
    x, y = place
    return (f'<g class="stage st-{render.esc(status)}" data-stage="{render.esc(step)}"><title>{render.esc(step)}: '
            f'{render.esc(status)}</title><rect x="{x}" y="{y}" width="{WIDTH}" height="{HEIGHT}" rx="5"/>'
            f'<text x="{x + 8}" y="{y + 14}">{render.esc(label)}</text>'
            f'<text class="state" x="{x + 8}" y="{y + 28}">{render.esc(status)}</text></g>')

"""The workflow page's stage graph: columns by dependency, a box per step coloured by status, arrays as one box."""

from __future__ import annotations

import re

from api.http.ui.graph import depths, stage_graph


def boxes(svg: str) -> dict[str, tuple[str, int]]:
    """step -> (status class, x) of each box."""
    found = re.findall(r'<g class="stage st-(\w+)" data-stage="([^"]+)"><title>[^<]*</title><rect x="(\d+)"', svg)
    return {step: (status, int(x)) for status, step, x in found}


def test_a_dependent_step_stands_right_of_what_it_waits_for_with_an_arrow_between():
    svg = stage_graph([{"name": "fetch", "status": "FINISHED"}, {"name": "train", "status": "RUNNING"},
                       {"name": "report", "status": "PENDING"}],
                      {"fetch": [], "train": ["fetch"], "report": ["train", "fetch"]})
    shown = boxes(svg)
    assert shown["fetch"][0] == "FINISHED" and shown["train"][0] == "RUNNING" and shown["report"][0] == "PENDING"
    assert shown["fetch"][1] < shown["train"][1] < shown["report"][1]
    assert svg.count('class="edge"') == 3


def test_a_task_array_is_one_box_showing_its_count_and_its_failed_task():
    svg = stage_graph([{"name": "sweep[0]", "status": "FINISHED"}, {"name": "sweep[1]", "status": "FAILED"}], {})
    assert boxes(svg) == {"sweep": ("FAILED", 8)} and "sweep ×2" in svg


def test_step_names_are_escaped():
    svg = stage_graph([{"name": "<b>x</b>", "status": "PENDING"}], {})
    assert "<b>" not in svg and "&lt;b&gt;" in svg


def test_depth_ignores_a_dependency_on_an_unknown_step():
    assert depths({"a": ["ghost"], "b": ["a"]}) == {"a": 0, "b": 1}

"""A restarted agent carries on under its node's registration while the control plane holds it: what was placed on
the node while the agent was away runs there, under the epoch it was placed with. A node that changed registers anew."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tests.unit.agent.fake_api import A1, FakeApi
from tests.unit.agent.test_agent_loop import assignment, config, drive


def test_a_restarted_agent_with_no_jobs_resumes_and_runs_what_was_placed_while_it_was_away(tmp_path: Path):
    with FakeApi() as api:
        drive(api, tmp_path, until=lambda: len(api.heartbeats) >= 1)
        api.start = [assignment(A1, epoch=1, script="exit 3")]  # placed on the node it still holds
        drive(api, tmp_path, until=lambda: ("exited", 1, 3) in api.events(A1))
    assert len(api.registrations) == 1, "registering anew gives up what was placed on the node meanwhile"
    assert api.events(A1) == [("started", 1, None), ("exited", 1, 3)]


def test_a_restarted_agent_whose_node_changed_registers_it_anew(tmp_path: Path):
    with FakeApi() as api:
        drive(api, tmp_path, until=lambda: len(api.heartbeats) >= 1)
        bigger = dataclasses.replace(config(api, tmp_path), cpus=8)
        drive(api, tmp_path, until=lambda: len(api.registrations) >= 2 and api.heartbeats[-1]["epoch"] == 2,
              agent_config=bigger)
    assert [r["cpu"] for r in api.registrations] == [4, 8]


def test_a_restarted_agent_the_control_plane_let_go_registers_anew(tmp_path: Path):
    with FakeApi() as api:
        drive(api, tmp_path, until=lambda: len(api.heartbeats) >= 1)
        beats = len(api.heartbeats)
        api.stale_heartbeats = 1  # its lease lapsed while it was away: the old epoch is refused
        drive(api, tmp_path, until=lambda: len(api.registrations) >= 2 and len(api.heartbeats) > beats + 1)
    assert api.heartbeats[beats]["epoch"] == 1  # it asked to resume first
    assert len(api.registrations) == 2 and api.heartbeats[-1]["epoch"] == 2

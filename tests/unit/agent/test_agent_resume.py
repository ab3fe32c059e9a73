"""A restarted agent carries on under its node's registration while the control plane holds it: what was placed on
the node while the agent was away runs there, under the epoch it was placed with. A node that changed registers anew."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from pathlib import Path

from api.agent.args import AgentConfig
from api.agent.main import run_agent
from tests.unit.agent.fake_api import FakeApi
from tests.unit.agent.test_agent_loop import assignment, config


def run(agent: AgentConfig, until, timeout: float = 10.0) -> None:
    async def main() -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(run_agent(agent, stop))
        deadline = time.monotonic() + timeout
        while not until() and time.monotonic() < deadline and not task.done():
            await asyncio.sleep(0.02)
        stop.set()
        await task

    asyncio.run(main())


def test_a_restarted_agent_with_no_jobs_resumes_and_runs_what_was_placed_while_it_was_away(tmp_path: Path):
    with FakeApi() as api:
        run(config(api, tmp_path), until=lambda: len(api.heartbeats) >= 1)
        api.start = [assignment("a1", epoch=1, script="exit 3")]  # placed on the node it still holds
        run(config(api, tmp_path), until=lambda: ("exited", 1, 3) in api.events("a1"))
    assert len(api.registrations) == 1, "registering anew gives up what was placed on the node meanwhile"
    assert api.events("a1") == [("started", 1, None), ("exited", 1, 3)]


def test_a_restarted_agent_whose_node_changed_registers_it_anew(tmp_path: Path):
    with FakeApi() as api:
        run(config(api, tmp_path), until=lambda: len(api.heartbeats) >= 1)
        bigger = dataclasses.replace(config(api, tmp_path), cpus=8)
        run(bigger, until=lambda: len(api.registrations) >= 2 and api.heartbeats[-1]["epoch"] == 2)
    assert [r["cpu"] for r in api.registrations] == [4, 8]


def test_a_restarted_agent_the_control_plane_let_go_registers_anew(tmp_path: Path):
    with FakeApi() as api:
        run(config(api, tmp_path), until=lambda: len(api.heartbeats) >= 1)
        beats = len(api.heartbeats)
        api.stale_heartbeats = 1  # its lease lapsed while it was away: the old epoch is refused
        run(config(api, tmp_path), until=lambda: len(api.registrations) >= 2 and len(api.heartbeats) > beats + 1)
    assert api.heartbeats[beats]["epoch"] == 1  # it asked to resume first
    assert len(api.registrations) == 2 and api.heartbeats[-1]["epoch"] == 2

"""The agent long-polls its assignments: new work starts at once, an idle node asks rarely, an old server is not spun on."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from pathlib import Path

from api.agent.main import run_agent
from tests.unit.agent.fake_api import A1, FakeApi
from tests.unit.agent.test_agent_loop import assignment, config


def run_for(api: FakeApi, tmp_path: Path, seconds: float, poll_wait: float, during=None) -> None:
    """Run the agent `seconds` (calling `during(elapsed)` every 20 ms), then stop it."""

    async def main() -> None:
        stop = asyncio.Event()
        agent = asyncio.create_task(run_agent(dataclasses.replace(config(api, tmp_path), poll_wait=poll_wait), stop))
        began = time.monotonic()
        while time.monotonic() - began < seconds and not agent.done():
            if during:
                during(time.monotonic() - began)
            await asyncio.sleep(0.02)
        stop.set()
        await agent

    asyncio.run(main())


def test_work_posted_while_a_poll_is_held_starts_at_once(tmp_path):
    posted: list[float] = []
    seen: list[float] = []

    def post(elapsed: float) -> None:
        if elapsed > 1.0 and not posted:
            posted.append(time.monotonic())
            with api.lock:
                api.start = [assignment(A1, command=["true"])]
        elif posted and not seen and api.events(A1):
            seen.append(time.monotonic())

    with FakeApi() as api:
        api.long_poll = True
        run_for(api, tmp_path, 3.0, poll_wait=10, during=post)
    assert api.events(A1) == [("started", 1, None), ("exited", 1, 0)]
    held = [(q, known) for _, q, known in api.polls[1:]]
    assert held and all(q["wait"] == "10" and known for q, known in held), "later polls send wait and the last ETag"
    assert seen[0] - posted[0] < 0.5, "the held poll answers the news: the job starts without waiting out the poll"


def test_an_idle_node_asks_once_per_wait_instead_of_every_poll_interval(tmp_path):
    with FakeApi() as api:
        api.long_poll = True
        run_for(api, tmp_path, 2.0, poll_wait=10)
        long_polls = len(api.polls)
    with FakeApi() as api:
        run_for(api, tmp_path / "plain", 2.0, poll_wait=0)
        plain = len(api.polls)
    assert long_polls <= 2 < 10 < plain  # poll interval 0.05 s: plain polling asks dozens of times


def test_a_server_that_ignores_wait_is_asked_every_poll_interval_not_in_a_spin(tmp_path):
    with FakeApi() as api:  # answers at once, unchanged: an older server
        run_for(api, tmp_path, 2.0, poll_wait=10)
        polls = len(api.polls)
    assert 5 < polls <= 2.0 / 0.05 + 5

"""An agent never acts on an older view of its work after a newer one: an assignments answer (poll or push) built
at an earlier log position than the newest it applied is not applied (api/agent/poll.AssignmentFeed.take)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import msgspec
import structlog

from api.agent.agent import Agent
from api.agent.metrics import NodeMetrics
from api.agent.node import build_executor
from api.agent.starts import decode_assignments
from tests.unit.agent.fake_api import A1, FakeApi
from tests.unit.agent.test_agent_loop import assignment, config

STOP_A1 = {"allocation_id": A1, "epoch": 1, "workflow_id": "wf-1", "stage": A1, "state": "CANCELED",
           "reason": "canceled by its owner"}


def pushed(body: dict) -> tuple:
    """What the agent bus hands the agent's loop for a push of this answer (api/agent/bus.AgentBus.heard)."""
    answer, refused = decode_assignments(msgspec.json.encode(body))
    return msgspec.structs.replace(answer, volumes=None), refused, '"pushed"'


def run_agent_with(api: FakeApi, tmp_path: Path, scenario: Callable[[Agent], object]) -> None:
    """Run an agent against the fake; `scenario(agent)` (a coroutine) runs beside it, then the agent stops."""

    async def main() -> None:
        stop, settings = asyncio.Event(), config(api, tmp_path)
        async with httpx.AsyncClient(base_url=settings.api, headers={"Authorization": "Bearer tok"}) as http:
            executor = build_executor(settings, structlog.get_logger("test"))
            try:
                agent = Agent(settings, http, executor, NodeMetrics(settings.sys_root))
                running = asyncio.create_task(agent.run(stop))
                try:
                    await scenario(agent)  # type: ignore[misc]
                finally:
                    stop.set()
                    await running
            finally:
                executor.close()

    asyncio.run(main())


async def until(check: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not check() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert check()


def test_a_push_older_than_the_poll_answer_that_stopped_a_job_does_not_start_it(tmp_path):
    with FakeApi() as api:
        api.stop, api.position = [STOP_A1], 40  # the catch-up poll: A1 was canceled at position 40

        async def scenario(agent: Agent) -> None:
            await until(lambda: len(api.polls) >= 2)  # the first answer was applied
            # held by nats-py through an outage and flushed now: the start of A1, as the log stood at position 30
            agent.bus.heard.append(pushed({"start": [assignment(A1, command=["sleep", "30"])], "stop": [],
                                           "volumes": [], "position": 30}))
            agent.wake.set()
            await until(lambda: not agent.bus.heard)
            await asyncio.sleep(0.5)  # rounds for a start to be reported
            assert A1 not in agent.slots

        run_agent_with(api, tmp_path, scenario)
    assert api.events(A1) == [], "the stopped job never ran"


def test_a_poll_answer_older_than_a_push_applied_does_not_undo_it(tmp_path):
    with FakeApi() as api:
        api.position = 50  # a worker whose views lag: its polls still list A1 to start, as the log stood at 50

        async def scenario(agent: Agent) -> None:
            await until(lambda: len(api.polls) >= 2)
            agent.bus.heard.append(pushed({"start": [], "stop": [STOP_A1], "volumes": [], "position": 60}))
            agent.wake.set()
            await until(lambda: not agent.bus.heard)
            with api.lock:
                api.start = [assignment(A1, command=["sleep", "30"])]
            polls = len(api.polls)
            await until(lambda: len(api.polls) >= polls + 3)
            assert A1 not in agent.slots

        run_agent_with(api, tmp_path, scenario)
    assert api.events(A1) == []


def test_answers_of_a_control_plane_that_says_no_position_are_applied_as_before(tmp_path):
    with FakeApi() as api:

        async def scenario(agent: Agent) -> None:
            agent.bus.heard.append(pushed({"start": [], "stop": [], "volumes": [], "position": 70}))
            agent.wake.set()
            await until(lambda: not agent.bus.heard)
            with api.lock:  # its polls carry no position: taken, though a push said one
                api.start = [assignment(A1, command=["true"])]
            await until(lambda: bool(api.events(A1)))

        run_agent_with(api, tmp_path, scenario)
    assert api.events(A1)[0] == ("started", 1, None)


def test_a_poll_answered_by_a_worker_further_behind_is_not_applied_and_the_polls_go_on_until_one_catches_up(
        tmp_path):
    with FakeApi() as api:
        api.stop, api.position = [STOP_A1], 40

        async def scenario(agent: Agent) -> None:
            await until(lambda: len(api.polls) >= 2)
            with api.lock:  # the next polls reach a worker whose views stand at 30: A1 not yet canceled there
                api.start, api.stop, api.position = [assignment(A1, command=["sleep", "30"])], [], 30
            polls = len(api.polls)
            await until(lambda: len(api.polls) >= polls + 3)
            assert A1 not in agent.slots
            with api.lock:  # caught up, and past: A1 placed again, at a new epoch
                api.start, api.position = [assignment(A1, epoch=2, command=["true"])], 45
            await until(lambda: bool(api.events(A1)))

        run_agent_with(api, tmp_path, scenario)
    assert api.events(A1)[0] == ("started", 2, None)

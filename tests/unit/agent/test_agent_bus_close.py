"""An agent's stop goes through even when nats-py's close raises its transport's cancelled close waiter."""

from __future__ import annotations

import asyncio

from api.agent.bus import AgentBus


class ClosingCancelled:
    async def close(self) -> None:  # as nats-py does when the connection was lost while it closed
        raise asyncio.CancelledError


def test_a_close_that_nats_py_ends_with_a_cancelled_waiter_does_not_end_the_agent_with_a_traceback():
    async def stop() -> bool:
        bus = AgentBus(lambda: None, asyncio.Event())
        bus.nc = ClosingCancelled()
        await bus.close()
        return bus.nc is None

    assert asyncio.run(stop())


def test_a_cancellation_of_the_agent_itself_still_goes_through_the_close():
    async def stop() -> None:
        bus = AgentBus(lambda: None, asyncio.Event())
        bus.nc = ClosingCancelled()
        task = asyncio.current_task()
        assert task is not None
        task.cancel()  # the agent's own task is being cancelled: the close must not swallow it
        await bus.close()

    try:
        asyncio.run(stop())
    except asyncio.CancelledError:
        return
    raise AssertionError("the agent's own cancellation was swallowed")

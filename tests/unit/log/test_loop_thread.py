"""Closing a connection never leaves a caller blocked forever."""

import asyncio
import threading

import pytest
from eventsourcing.persistence import OperationalError

from adapters.jetstream.loop import LoopThread


def test_a_call_waiting_when_the_loop_stops_fails_instead_of_hanging():
    loop = LoopThread()
    outcome: list[BaseException] = []

    def wait_forever() -> None:
        try:
            loop.run(asyncio.sleep(3600))
        except BaseException as error:  # noqa: BLE001 - the test records whatever ends the call
            outcome.append(error)

    caller = threading.Thread(target=wait_forever)
    caller.start()
    while not loop._pending:
        pass
    loop.stop()
    caller.join(timeout=5)
    assert not caller.is_alive()
    assert isinstance(outcome[0], OperationalError)


def test_a_call_after_the_loop_stopped_is_refused_at_once():
    loop = LoopThread()
    loop.stop()
    with pytest.raises(OperationalError, match="closed"):
        loop.run(asyncio.sleep(0))


def test_stopping_leaves_no_task_pending_on_the_closed_loop():
    loop = LoopThread()
    caller = threading.Thread(target=lambda: pytest.raises(OperationalError, loop.run, asyncio.sleep(3600)))
    caller.start()
    while not loop._pending:
        pass
    loop.stop()
    caller.join(timeout=5)
    assert loop.loop.is_closed() and asyncio.all_tasks(loop.loop) == set()

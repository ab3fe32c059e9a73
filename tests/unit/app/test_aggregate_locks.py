"""Commands of one process take turns on an aggregate, and never wait on each other in a cycle."""

from __future__ import annotations

import threading
import time
from uuid import uuid4

import pytest

from domain.app import Conflict
from domain.app.aggregate_locks import PATIENCE, AggregateLocks
from tests.unit.app.builders import ADMIN, T0, app, user

JOB = "version: v4\njobs:\n  j:\n    image: {uri: docker://alpine}\n    command: ['true']\n"


def _taker(locks: AggregateLocks, key: str, owner: object, results: dict) -> threading.Thread:
    def take() -> None:
        results[owner] = locks.take(key, owner)
        results[(owner, "at")] = time.monotonic()

    thread = threading.Thread(target=take)
    thread.start()
    return thread


def test_a_command_waits_for_the_one_holding_the_aggregate_and_then_holds_it():
    locks, first, second, results = AggregateLocks(), object(), object(), {}
    assert locks.take("workflow", first) == (True, False)
    waiter = _taker(locks, "workflow", second, results)
    time.sleep(0.1)
    assert second not in results  # still waiting
    released = time.monotonic()
    locks.release({"workflow"}, first)
    waiter.join(5)
    assert results[second] == (True, True) and results[(second, "at")] >= released


def test_a_wait_that_would_close_a_cycle_goes_on_at_once_without_the_aggregate():
    locks, a, b, results = AggregateLocks(), object(), object(), {}
    assert locks.take("x", a)[0] and locks.take("y", b)[0]
    waiter = _taker(locks, "y", a, results)  # a holds x and waits for y
    time.sleep(0.1)
    began = time.monotonic()
    assert locks.take("x", b) == (False, False)  # b holds y: waiting for x would wait on itself
    assert time.monotonic() - began < PATIENCE / 2
    locks.release({"y"}, b)
    waiter.join(5)
    assert results[a] == (True, True)


def test_a_holder_may_take_what_it_holds_again_and_release_only_its_own():
    locks, a, b = AggregateLocks(), object(), object()
    assert locks.take("x", a) == locks.take("x", a) == (True, False)
    locks.release({"x"}, b)  # not b's: still a's
    assert len(locks) == 1
    locks.release({"x"}, a)
    assert len(locks) == 0 and locks.take("x", b) == (True, False)


def test_a_command_gives_its_turn_back_when_it_ends_and_when_it_fails():
    roving, wid = app(), uuid4()
    roving.submit_workflow(wid, "w", JOB, 0, None, user(), T0)
    assert len(roving.repository.locks) == 0
    began = time.monotonic()
    with pytest.raises(Conflict):
        for _ in range(2):  # the second stop of an ended workflow is refused: it too gives its turn back
            roving.stop_workflow(wid, ADMIN, T0)
    assert len(roving.repository.locks) == 0 and time.monotonic() - began < PATIENCE / 2

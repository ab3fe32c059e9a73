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


def test_calls_from_many_threads_each_get_their_own_answer():
    loop = LoopThread()
    answers: dict[int, list[int]] = {}

    def caller(thread: int) -> None:
        answers[thread] = [loop.call(lambda done, n=n: done(thread * 1000 + n, None)) for n in range(200)]

    callers = [threading.Thread(target=caller, args=(t,)) for t in range(8)]
    for c in callers:
        c.start()
    for c in callers:
        c.join(timeout=30)
    loop.stop()
    assert answers == {t: [t * 1000 + n for n in range(200)] for t in range(8)}


def test_calls_that_arrive_while_the_loop_is_busy_wake_it_once(monkeypatch):
    loop = LoopThread()
    wakes: list[object] = []
    real = loop.loop.call_soon_threadsafe
    monkeypatch.setattr(loop.loop, "call_soon_threadsafe", lambda *a, **k: (wakes.append(a[0]), real(*a, **k))[1])
    busy, release = threading.Event(), threading.Event()
    holder = threading.Thread(target=loop.call, args=(lambda done: (busy.set(), release.wait(5), done(0, None)),))
    holder.start()
    busy.wait(5)
    answers: list[int] = []
    callers = [threading.Thread(target=lambda n=n: answers.append(loop.call(lambda done: done(n, None))))
               for n in range(5)]
    for c in callers:
        c.start()
    while len(loop._pending) < 6:  # the holder and the five, all waiting
        pass
    release.set()
    for c in [holder, *callers]:
        c.join(timeout=5)
    woken = len(wakes)
    loop.stop()
    assert sorted(answers) == [0, 1, 2, 3, 4]
    assert woken == 2  # one for the call holding the loop, one for the five that arrived meanwhile

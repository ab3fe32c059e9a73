"""Commands that touch several allocations of one node or workflow, and commands that lose a write race."""

from __future__ import annotations

import threading
from uuid import uuid4

import pytest

from domain.allocation import QueueState
from domain.app import Conflict, StaleEpoch
from domain.app.ids import allocation_id
from tests.unit.app.builders import ADMIN, T0, app, later, user

TWO_JOBS = """
version: v4
jobs:
  a:
    image: {uri: docker://alpine}
    command: [sleep, "9"]
    resource: {cpu: {cores: 2}, memory: {size: 1GiB}}
  b:
    image: {uri: docker://alpine}
    command: [sleep, "9"]
    resource: {cpu: {cores: 2}, memory: {size: 1GiB}}
"""

JOB_AND_SERVICE = """
version: v4
jobs:
  client:
    image: {uri: docker://alpine}
    command: ["true"]
    resource: {cpu: {cores: 1}, memory: {size: 1GiB}}
    depends-on: [{name: server, status: RUNNING}]
services:
  server:
    image: {uri: docker://alpine}
    command: [sleep, "99"]
    resource: {cpu: {cores: 1}, memory: {size: 1GiB}}
"""

WHOLE_NODE = """
version: v4
jobs:
  big:
    image: {uri: docker://alpine}
    command: ["true"]
    resource: {cpu: {cores: 4}, memory: {size: 1GiB}}
"""


def node_with_two_stages(roving):
    node, _ = roving.register_node("node-1", 4, 8 << 30, {}, {}, "pool-a", "127.0.0.1", 9100, T0)
    wid = uuid4()
    roving.submit_workflow(wid, "two", TWO_JOBS, 0, None, user(), T0)
    epochs = {s: roving.place(allocation_id(wid, s, 1), [node], "scheduler", later(1)) for s in ("a", "b")}
    return node, wid, epochs


def test_stopping_a_workflow_with_two_stages_on_one_node_releases_both():
    roving = app()
    node, wid, _ = node_with_two_stages(roving)
    roving.stop_workflow(wid, ADMIN, later(2))
    assert roving.allocations.on_node(node) == []
    assert roving.repository.get(wid).status == "CANCELED"


def test_evicting_a_node_with_two_stages_gives_its_whole_capacity_back():
    roving = app()
    node, wid, _ = node_with_two_stages(roving)
    lost = roving.evict(node, "bad fan", ADMIN, later(2))
    assert sorted(lost) == sorted(str(allocation_id(wid, s, 1)) for s in ("a", "b"))
    assert roving.allocations.on_node(node) == []
    holds = list(roving.repository.get(node).holds)
    roving.release_hold(node, holds[0], ADMIN, later(3))
    big = uuid4()
    roving.submit_workflow(big, "big", WHOLE_NODE, 0, None, user(), later(4))
    roving.place(allocation_id(big, "big", 1), [node], "scheduler", later(5))  # refused before: the node looked full
    assert roving.repository.get(allocation_id(big, "big", 1)).state is QueueState.RUNNING


def test_a_rejoining_agent_loses_both_stages_of_one_workflow_in_one_command():
    roving = app()
    node, wid, _ = node_with_two_stages(roving)
    roving.register_node("node-1", 4, 8 << 30, {}, {}, "pool-a", "127.0.0.1", 9100, later(3))
    for stage in ("a", "b"):
        assert roving.repository.get(allocation_id(wid, stage, 1)).state is QueueState.EVICTED
    assert roving.allocations.on_node(node) == []


def test_a_job_and_a_service_on_one_node_both_end_and_the_workflow_finishes():
    roving = app()
    node, _ = roving.register_node("node-1", 4, 8 << 30, {}, {}, "pool-a", "127.0.0.1", 9100, T0)
    wid = uuid4()
    roving.submit_workflow(wid, "pair", JOB_AND_SERVICE, 0, None, user(), T0)
    server = allocation_id(wid, "server", 1)
    fence = roving.place(server, [node], "scheduler", later(1))
    roving.report(node, server, fence, "ready", None, "", later(2))
    client = allocation_id(wid, "client", 1)
    roving.report(node, client, roving.place(client, [node], "scheduler", later(3)), "exited", 0, "", later(4))
    assert roving.repository.get(wid).status == "FINISHED"
    assert roving.allocations.on_node(node) == []


def test_the_same_exit_reported_twice_is_recorded_once():
    roving = app()
    node, wid, epochs = node_with_two_stages(roving)
    a = allocation_id(wid, "a", 1)
    roving.report(node, a, epochs["a"], "exited", 0, "", later(3))
    version = roving.repository.get(a).version
    roving.report(node, a, epochs["a"], "exited", 0, "", later(4))
    assert roving.repository.get(a).version == version


def test_readiness_reported_twice_is_a_no_op():
    roving = app()
    node, _ = roving.register_node("node-1", 4, 8 << 30, {}, {}, "pool-a", "127.0.0.1", 9100, T0)
    wid = uuid4()
    roving.submit_workflow(wid, "pair", JOB_AND_SERVICE, 0, None, user(), T0)
    server = allocation_id(wid, "server", 1)
    fence = roving.place(server, [node], "scheduler", later(1))
    roving.report(node, server, fence, "ready", None, "", later(2))
    version = roving.repository.get(wid).version
    roving.report(node, server, fence, "ready", None, "", later(3))
    assert roving.repository.get(wid).version == version


def test_an_exit_for_a_stopped_allocation_is_a_stale_epoch_not_a_second_ending():
    roving = app()
    node, wid, epochs = node_with_two_stages(roving)
    roving.stop_workflow(wid, ADMIN, later(2))
    with pytest.raises(StaleEpoch, match="already ended CANCELED"):
        roving.report(node, allocation_id(wid, "a", 1), epochs["a"], "exited", 143, "", later(3))


def test_stopping_an_ended_workflow_is_a_real_conflict_that_says_so():
    roving = app()
    _, wid, _ = node_with_two_stages(roving)
    roving.stop_workflow(wid, ADMIN, later(2))
    with pytest.raises(Conflict, match="already ended CANCELED"):
        roving.stop_workflow(wid, ADMIN, later(3))


def test_a_report_that_loses_a_write_race_decides_again_and_both_exits_land(monkeypatch):
    """Two exits on one node at once: the second writer's commit is refused, it reloads and records its own.

    The rival stands for another process: this process's commands take turns on an aggregate
    (domain/app/aggregate_locks.py), so a rival thread that the holder waits for goes on without its turn after
    the wait's bound, as another process's writer would."""
    monkeypatch.setattr("domain.app.aggregate_locks.PATIENCE", 0.05)
    roving = app()
    node, wid, epochs = node_with_two_stages(roving)
    a, b = allocation_id(wid, "a", 1), allocation_id(wid, "b", 1)
    original_save, raced = type(roving).save, threading.Event()

    def save_after_a_rival(self, *objs, **kwargs):
        if not raced.is_set():  # the first save of a's report: b's report lands first, from another thread
            raced.set()
            rival = threading.Thread(target=roving.report, args=(node, b, epochs["b"], "exited", 0, "", later(3)))
            rival.start()
            rival.join()
        return original_save(self, *objs, **kwargs)

    type(roving).save = save_after_a_rival
    try:
        roving.report(node, a, epochs["a"], "exited", 0, "", later(3))
    finally:
        type(roving).save = original_save
    assert raced.is_set()
    assert {roving.repository.get(x).state for x in (a, b)} == {QueueState.FINISHED}
    assert roving.allocations.on_node(node) == []
    assert roving.repository.get(wid).status == "FINISHED"


def test_a_resubmission_with_the_same_id_returns_the_first_and_saves_nothing():
    roving, wid, alice = app(), uuid4(), user()
    roving.submit_workflow(wid, "two", TWO_JOBS, 0, None, alice, T0)
    version = roving.repository.get(wid).version
    roving.submit_workflow(wid, "two", TWO_JOBS, 0, None, alice, later(1))
    assert roving.repository.get(wid).version == version
    with pytest.raises(Conflict, match="Idempotency-Key was already used for a different submission"):
        roving.submit_workflow(wid, "big", WHOLE_NODE, 0, None, alice, later(2))


def test_a_refusal_still_in_doubt_after_every_attempt_is_busy_not_a_crash():
    """A refusal decided on memory is decided again; if every attempt still doubts it (a log that cannot be read
    back during a server's loss), the caller is told to try again (503), never an AssertionError (a 500 and a
    traceback the cluster soak met)."""
    from domain.app.errors import Busy, Conflict
    from domain.app.unit_of_work import ATTEMPTS, command

    class Doubting:
        forgotten = 0

        def enter(self) -> bool:
            return True

        def leave(self) -> None:
            pass

        def doubt(self) -> bool:
            return True

        def forget(self) -> None:
            Doubting.forgotten += 1

    class Handler:
        uow = type("Uow", (), {"repository": Doubting()})()

        @command
        def report(self) -> None:
            raise Conflict("the allocation moved on")

    with pytest.raises(Busy, match="could not confirm its answer against the log"):
        Handler().report()
    assert Doubting.forgotten == ATTEMPTS

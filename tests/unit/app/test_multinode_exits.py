"""A multinode job's ranks end together: the allocation ends when every rank has exited, each exit recorded once."""

from __future__ import annotations

from uuid import uuid4

import pytest

from domain.allocation import QueueState
from domain.app import StaleEpoch
from domain.app.ids import allocation_id
from tests.unit.app.builders import T0, app, later, user

TWO_NODES = """
version: v4
jobs:
  train:
    image: {uri: docker://alpine}
    script: echo train
    multinode: {nodes: 2, implementation: openmpi}
"""


def placed_pair(roving):
    n1, _ = roving.register_node("n1", 4, 8 << 30, {}, {}, "pool-a", "10.0.0.1", 9100, T0)
    n2, _ = roving.register_node("n2", 4, 8 << 30, {}, {}, "pool-a", "10.0.0.2", 9100, T0)
    wid = uuid4()
    roving.submit_workflow(wid, "mpi", TWO_NODES, 0, None, user(), T0)
    train = allocation_id(wid, "train", 1)
    fence = roving.place(train, [n1, n2], "scheduler", later(1))
    return wid, train, fence, n1, n2


def test_the_job_finishes_only_when_both_ranks_have_exited():
    roving = app()
    wid, train, fence, n1, n2 = placed_pair(roving)
    roving.report(n2, train, fence, "exited", 0, "", later(5))
    assert roving.repository.get(train).state is QueueState.RUNNING
    assert roving.allocations.on_node(n1) != []  # every node keeps the job's capacity until the end
    roving.report(n1, train, fence, "exited", 0, "", later(6))
    assert roving.repository.get(train).state is QueueState.FINISHED
    assert roving.repository.get(wid).stage("train").status.value == "FINISHED"
    assert roving.allocations.on_node(n1) == [] and roving.allocations.on_node(n2) == []


def test_a_failed_rank_stops_the_others_and_the_job_fails_naming_that_rank():
    roving = app()
    wid, train, fence, n1, n2 = placed_pair(roving)
    roving.report(n2, train, fence, "exited", 3, "", later(5))
    alloc = roving.repository.get(train)
    assert alloc.stopping and alloc.state is QueueState.RUNNING
    roving.report(n1, train, fence, "exited", 143, "stopped", later(6))  # rank 0 killed because rank 1 failed
    alloc = roving.repository.get(train)
    assert alloc.state is QueueState.FAILED and alloc.reason == "rank 1 exit 3" and alloc.exit_code == 3
    assert roving.repository.get(wid).stage("train").reason == "Failed: rank 1 exit 3"


def test_a_retried_rank_exit_is_recorded_once():
    roving = app()
    _, train, fence, n1, n2 = placed_pair(roving)
    roving.report(n1, train, fence, "exited", 0, "", later(5))
    version = roving.repository.get(train).version
    roving.report(n1, train, fence, "exited", 0, "", later(6))
    assert roving.repository.get(train).version == version
    roving.report(n2, train, fence, "exited", 0, "", later(7))
    roving.report(n2, train, fence, "exited", 0, "", later(8))  # after the end too
    assert roving.repository.get(train).state is QueueState.FINISHED


def test_a_node_outside_the_placement_cannot_report_a_rank():
    roving = app()
    _, train, fence, _, _ = placed_pair(roving)
    n3, _ = roving.register_node("n3", 4, 8 << 30, {}, {}, "pool-a", "10.0.0.3", 9100, T0)
    with pytest.raises(StaleEpoch):
        roving.report(n3, train, fence, "exited", 0, "", later(5))


def test_two_ranks_exiting_at_once_are_both_recorded_and_the_job_ends_once():
    """The second writer's commit is refused, it reloads, records its rank, and is the one that ends the job."""
    import threading
    roving = app()
    wid, train, fence, n1, n2 = placed_pair(roving)
    original_save, raced = type(roving).save, threading.Event()

    def save_after_a_rival(self, *objs, **kwargs):
        if not raced.is_set():  # rank 0's report is about to land: rank 1's lands first, from another thread
            raced.set()
            rival = threading.Thread(target=roving.report, args=(n2, train, fence, "exited", 0, "", later(5)))
            rival.start()
            rival.join()
        return original_save(self, *objs, **kwargs)

    type(roving).save = save_after_a_rival
    try:
        roving.report(n1, train, fence, "exited", 0, "", later(5))
    finally:
        type(roving).save = original_save
    alloc = roving.repository.get(train)
    assert raced.is_set() and alloc.state is QueueState.FINISHED and sorted(alloc.rank_exits) == sorted([str(n1), str(n2)])
    assert roving.repository.get(wid).status == "FINISHED"
    assert roving.allocations.on_node(n1) == [] and roving.allocations.on_node(n2) == []

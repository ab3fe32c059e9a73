"""Given an allocation for a stage attempt, its queue state moves only along legal edges and fences stale reports."""

from uuid import UUID

import pytest
from workflow_builders import at

from domain.allocation import Allocation, IllegalTransition, QueueState, StaleFence, effective_preemptible
from domain.fuzzfile import Resources


def allocation(**kwargs) -> Allocation:
    resources = Resources(cpu_cores=2, memory_bytes=2**30)
    return Allocation.request(UUID(int=7), UUID(int=1), "train", 1, resources, by="scheduler", at=at(0), **kwargs)


def running() -> Allocation:
    alloc = allocation(execute_timeout_seconds=600.0)
    alloc.mark_ready(by="workflow", at=at(1))
    alloc.place(["n1"], by="scheduler", at=at(2))
    return alloc


def test_a_placed_allocation_runs_with_its_nodes_epoch_and_start_time():
    alloc = running()
    assert (alloc.state, alloc.nodes, alloc.epoch, alloc.started_at) == (QueueState.RUNNING, ["n1"], 1, at(2))


def test_each_placement_increases_the_fencing_epoch_and_old_reports_are_refused():
    alloc = running()
    assert alloc.place(["n2"], by="scheduler", at=at(3)) == 2
    with pytest.raises(StaleFence, match="epoch 1 refused"):
        alloc.exited(0, epoch=1, by="agent", at=at(4))
    alloc.exited(0, epoch=2, by="agent", at=at(4))
    assert (alloc.state, alloc.exit_code, alloc.ended_at) == (QueueState.FINISHED, 0, at(4))


def test_a_non_zero_exit_fails_the_allocation():
    alloc = running()
    alloc.exited(3, epoch=1, by="agent", at=at(5))
    assert alloc.state is QueueState.FAILED


def test_a_pending_allocation_cannot_start_running():
    with pytest.raises(IllegalTransition, match="is PENDING; it cannot become RUNNING"):
        allocation().place(["n1"], by="scheduler", at=at(1))


def test_an_ended_allocation_cannot_move_again():
    alloc = running()
    alloc.preempt("higher priority work", by="scheduler", at=at(3))
    with pytest.raises(IllegalTransition, match="it has ended"):
        alloc.evict("node lost", by="monitoring", at=at(4))


def test_only_running_allocations_are_preempted_or_evicted():
    alloc = allocation()
    with pytest.raises(IllegalTransition):
        alloc.preempt("x", by="scheduler", at=at(1))
    alloc.cancel("workflow canceled", by="alice", at=at(1))
    assert alloc.state is QueueState.CANCELED


def test_priority_inputs_are_recorded_and_a_positive_workflow_priority_is_refused():
    alloc = allocation(workflow_priority=-5, organization_priority=10, group_priority=3, user_priority=1)
    assert alloc.priority == {"workflow": -5, "organization": 10, "group": 3, "user": 1}
    with pytest.raises(ValueError, match="0 or lower"):
        allocation(workflow_priority=1)


def test_per_stage_preemptible_wins_over_the_start_flag_and_top_level():
    assert effective_preemptible(False, True, True) is False
    assert effective_preemptible(None, True, False) is True
    assert effective_preemptible(None, None, True) is True
    assert effective_preemptible(None, None, None) is False


def test_a_request_recorded_with_cpu_and_memory_spelled_short_reads_back_as_the_stages_resources():
    """Logs written by hand or by early tools spell them `cpu` and `memory`; the queue view always read those too."""
    recorded = Allocation(id=UUID(int=8), workflow_id=UUID(int=1), stage="train", attempt=1,
                          resources={"cpu": 8, "memory": 2**30, "devices": {"gpu": 1}}, priority={"workflow": 0},
                          preemptible=False, execute_timeout_seconds=None, by="scheduler", at=at(0))
    assert recorded.resources == Resources(cpu_cores=8, memory_bytes=2**30, devices={"gpu": 1})

"""Work that lands on a node just after the node went (or took an evict hold) is swept off by the same command as
work that was there: evicted, and retried or failed by its workflow's policy; work the control plane's own removal
raced, that no agent spoke of, goes back to the queue."""

from __future__ import annotations

from uuid import uuid4

from domain.allocation import QueueState
from domain.app import ReadModelFunctions
from domain.app.ids import allocation_id
from tests.unit.app.builders import ADMIN, PIPELINE, T0, app, later, user


def lagging_views():
    """Read models that have not seen the placement yet: a command taking work off the node finds none there."""
    return app(ReadModelFunctions(running_on=lambda node: []))


def placed_pre(roving, name: str = "n1"):
    node, _ = roving.register_node(name, 4, 8 << 30, {}, {}, "pool", "127.0.0.1", 9100, T0)
    wid = uuid4()
    roving.submit_workflow(wid, "pipe", PIPELINE, 0, None, user(), T0)
    pre = allocation_id(wid, "pre", 1)
    roving.place(pre, [node], "scheduler", later(1))
    return node, wid, pre


def test_work_the_views_did_not_show_when_its_node_was_lost_is_evicted_and_retried_by_the_sweep():
    roving = lagging_views()
    node, wid, pre = placed_pre(roving)
    roving.node_lost(node, later(2))
    assert roving.repository.get(pre).state is QueueState.RUNNING  # the lost node's command did not see it
    assert roving.evict_stray(pre, later(3))
    alloc = roving.repository.get(pre)
    assert alloc.state is QueueState.EVICTED and "node n1 is OFFLINE (lease lapsed)" in alloc.reason
    assert roving.repository.get(allocation_id(wid, "pre", 2)).state is QueueState.READY  # retry on: [node]


def test_work_placed_before_its_node_registered_again_is_evicted_by_the_sweep():
    roving = lagging_views()
    node, _, pre = placed_pre(roving)
    roving.register_node("n1", 4, 8 << 30, {}, {}, "pool", "127.0.0.1", 9100, later(2))  # a new agent, epoch 2
    assert roving.evict_stray(pre, later(3))
    assert "rejoined (epoch 2) after the placement (epoch 1)" in roving.repository.get(pre).reason


def test_work_on_a_node_under_an_evict_hold_is_evicted_and_work_under_a_cordon_stays():
    roving = lagging_views()
    node, _, pre = placed_pre(roving)
    roving.cordon(node, "bios", ADMIN, later(2))
    assert not roving.evict_stray(pre, later(3))
    assert roving.repository.get(pre).state is QueueState.RUNNING
    roving.evict(node, "bad DIMM", ADMIN, later(4))
    assert roving.evict_stray(pre, later(5))
    assert roving.repository.get(pre).state is QueueState.EVICTED


def test_work_on_a_healthy_node_is_left_running():
    roving = app()
    _, _, pre = placed_pre(roving)
    assert not roving.evict_stray(pre, later(2))
    assert roving.repository.get(pre).state is QueueState.RUNNING


def test_a_node_whose_deprovision_hold_waited_is_deprovisioned_once_its_work_ended():
    roving = lagging_views()
    node, _, pre = placed_pre(roving)
    roving.deprovision(node, False, False, ADMIN, later(2))  # the views showed no work: removed at once
    assert roving.repository.get(node).removed
    assert roving.evict_stray(pre, later(3))  # what landed meanwhile does not run on a removed node
    alloc = roving.repository.get(pre)
    assert alloc.state is QueueState.PREEMPTED and "node n1 was removed" in alloc.reason
    assert "back in the queue" in alloc.reason  # the control plane's own race: not a failure of the job


def test_a_deprovision_waits_for_running_work_and_the_sweep_finishes_it_when_the_work_ended():
    roving = app()
    node, _, pre = placed_pre(roving)
    roving.deprovision(node, False, False, ADMIN, later(2))
    assert not roving.repository.get(node).removed
    assert not roving.deprovision_emptied(node, later(3))
    epoch = roving.repository.get(pre).epoch
    roving.report(node, pre, epoch, "exited", 0, "", later(4))  # its end deprovisions the emptied node at once
    assert roving.repository.get(node).removed
    assert not roving.deprovision_emptied(node, later(5))

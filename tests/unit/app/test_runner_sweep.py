"""The scheduler's pass sweeps what the views show landed on a node that may not hold it, and runs the next pass's
placements on capacity read off the allocations: a node that went while a placement landed loses that work."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import uuid4

from api.scheduler.runner import SchedulerRunner
from domain.allocation import QueueState
from domain.app import ReadModelFunctions
from domain.app.ids import allocation_id
from projections.views import Views
from tests.unit.api.harness import SyncTailer
from tests.unit.app.builders import ADMIN, PIPELINE, T0, app, user

GiB = 1 << 30


def control_plane():
    """The application's read models lag (they show no work on any node); the runner's views follow the log."""
    roving, views = app(ReadModelFunctions(running_on=lambda node: [])), Views()
    return roving, views, SchedulerRunner(roving, views, SyncTailer(roving, views), None)


def test_a_pass_evicts_work_placed_on_a_node_whose_loss_did_not_see_it_and_retries_it():
    roving, views, runner = control_plane()
    node, _ = roving.register_node("n1", 4, 4 * GiB, {}, {}, "pool", "127.0.0.1", 9100, T0)
    wid = uuid4()
    roving.submit_workflow(wid, "w", PIPELINE, 0, None, user(), datetime.now(UTC))
    runner.tick()
    pre = allocation_id(wid, "pre", 1)
    assert roving.repository.get(pre).state is QueueState.RUNNING
    roving.node_lost(node, datetime.now(UTC))  # its command found nothing on the node
    assert roving.repository.get(pre).state is QueueState.RUNNING
    runner.tick()
    assert roving.repository.get(pre).state is QueueState.EVICTED
    assert roving.repository.get(allocation_id(wid, "pre", 2)).state is QueueState.READY  # retry on: [node]


def test_a_pass_deprovisions_a_node_whose_deprovision_hold_waited_for_work_that_has_ended():
    roving, views, runner = control_plane()
    node, _ = roving.register_node("n1", 4, 4 * GiB, {}, {}, "pool", "127.0.0.1", 9100, T0)
    roving.register_node("n2", 4, 4 * GiB, {}, {}, "pool", "127.0.0.1", 9100, T0)
    roving.add_hold(node, "deprovision", "retire", ADMIN, datetime.now(UTC))  # a hold that waits, set by hand
    assert not roving.repository.get(node).removed
    runner.tick()
    assert roving.repository.get(node).removed

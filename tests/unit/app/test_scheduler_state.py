"""The scheduler's own state lives beside the views: a runner's pass is shown whole from its state, and the views a
runner ran over answer exactly as views that only replayed the log."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import uuid4

from api.scheduler.runner import SchedulerRunner
from api.scheduler.state import SchedulerState
from domain.app.ids import allocation_id
from domain.scheduler import Counters, Decisions, ReservationHeld
from domain.scheduler.last_pass import last_pass
from domain.scheduler.reasons import Reason, Why
from projections.views import Views
from tests.unit.api.harness import SyncTailer
from tests.unit.app.builders import T0, app, user

GiB = 1 << 30
JOB = "version: v4\njobs:\n  main:\n    image: {uri: docker://alpine}\n    script: echo hi\n" \
      "    resource: {cpu: {cores: CORES}}\n"


def submit(roving, cores: int, priority: int = 0):
    wid = uuid4()
    roving.submit_workflow(wid, "w", JOB.replace("CORES", str(cores)), priority, None, user(),
                           datetime.now(UTC) - timedelta(minutes=1))
    return allocation_id(wid, "main", 1)


def test_a_pass_is_shown_whole_by_allocation_id_as_uuid_or_text_and_the_next_pass_replaces_it():
    held, other = uuid4(), uuid4()
    decisions = Decisions(
        reasons={str(held): Why(reason=Reason.NODE_HELD, message="held"), str(other): Why(reason=Reason.RUNNING)},
        priorities={str(held): 3}, counters=Counters(considered=2, placed=1, blocked=1),
        reservation=ReservationHeld(allocation_id=str(held), node_ids=("n1",), estimated_start=T0))
    state = SchedulerState()
    assert (state.why(held), state.last.priorities, state.last.stats) == (None, {}, {})  # never led: nothing
    state.publish(last_pass(decisions, refused=0, elapsed=0.0035, now=T0))
    assert state.why(held).message == "held" and state.why(str(held)).message == "held"
    assert state.last.priorities == {str(held): 3.0} and isinstance(state.last.priorities[str(held)], float)
    assert state.last.stats == {
        "last_pass_at": T0.isoformat(), "last_pass_ms": 3.5, "considered": 2, "placed": 1, "backfilled": 0,
        "preempted": 0, "blocked": 1, "refused": 0,
        "reservation": {"allocation_id": str(held), "node_ids": ["n1"], "estimated_start": T0.isoformat()}}
    state.publish(last_pass(Decisions(reasons={str(other): Why(reason=Reason.FINISHED)}), 0, 0.001, T0))
    assert (state.why(held), state.why(other).reason) == (None, Reason.FINISHED)  # a pass that does not name it


def test_the_views_a_runner_ran_over_answer_as_a_replay_of_the_log_does():
    roving, views = app(), Views()
    runner = SchedulerRunner(roving, views, SyncTailer(roving, views), None)
    roving.register_node("n1", 2, 4 * GiB, {}, {}, "pool", "127.0.0.1", 9100, T0)
    blocked, placed = submit(roving, cores=4), submit(roving, cores=1, priority=-5)
    runner.tick()
    runner.tick()
    assert runner.state.why(blocked).reason is Reason.INSUFFICIENT_RESOURCES and runner.state.last.stats
    replayed = Views()
    SyncTailer(roving, replayed).wait_for(roving.last_position)
    SyncTailer(roving, views).wait_for(roving.last_position)
    assert replayed.position == views.position
    now = datetime.now(UTC)
    assert views.queue.stats() == replayed.queue.stats()
    assert views.queue.rows(now=now) == replayed.queue.rows(now=now)
    assert views.queue.get(placed).state == "RUNNING"
    assert views.queue.page(now=now, live_only=True) == replayed.queue.page(now=now, live_only=True)

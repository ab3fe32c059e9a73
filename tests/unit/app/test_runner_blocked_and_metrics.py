"""The runner over the in-memory application: blocked causes become events once, waits are observed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import uuid4

from prometheus_client import REGISTRY

from api.scheduler.runner import SchedulerRunner
from domain.app.ids import allocation_id
from domain.scheduler.reasons import Reason, Why
from projections.views import Views
from tests.unit.api.harness import SyncTailer
from tests.unit.app.builders import T0, app, user

GiB = 1 << 30
JOB = "version: v4\njobs:\n  main:\n    image: {uri: docker://alpine}\n    script: echo hi\n" \
      "    resource: {cpu: {cores: CORES}}\n"


def control_plane():
    roving, views = app(), Views()
    return roving, views, SchedulerRunner(roving, views, SyncTailer(roving, views), None)


def blocked_events(roving, aid):
    return [e for e in roving.repository.event_store.get(aid)
            if type(e).__qualname__ == "Allocation.SchedulingBlocked"]


def sample(name: str) -> float:
    return REGISTRY.get_sample_value(name) or 0.0


def submit(roving, cores: int, minutes_ago: float = 0):
    wid = uuid4()
    at = datetime.now(UTC) - timedelta(minutes=minutes_ago)
    roving.submit_workflow(wid, "w", JOB.replace("CORES", str(cores)), 0, None, user(), at)
    return allocation_id(wid, "main", 1)


def test_a_blocked_allocation_gets_one_event_however_many_passes_see_the_same_cause():
    roving, views, runner = control_plane()
    roving.register_node("n1", 2, 4 * GiB, {}, {}, "pool", "127.0.0.1", 9100, T0)
    aid = submit(roving, cores=4)
    for _ in range(3):
        runner.tick()
    events = blocked_events(roving, aid)
    assert len(events) == 1
    assert events[0].reason == Reason.INSUFFICIENT_RESOURCES.value
    assert runner.state.why(aid).reason is Reason.INSUFFICIENT_RESOURCES


def test_a_new_leader_does_not_repeat_a_cause_already_written():
    roving, views, runner = control_plane()
    roving.register_node("n1", 2, 4 * GiB, {}, {}, "pool", "127.0.0.1", 9100, T0)
    aid = submit(roving, cores=4)
    runner.tick()
    SchedulerRunner(roving, views, SyncTailer(roving, views), None).tick()
    assert len(blocked_events(roving, aid)) == 1


def test_a_changed_cause_is_written_again():
    roving = app()
    aid = submit(roving, cores=1)
    held = Why(reason=Reason.NODE_HELD, message="n1 is cordoned", detail={"holds": ["h1"]})
    assert roving.record_blocked(aid, held, "scheduler", T0) is True
    assert roving.record_blocked(aid, held, "scheduler", T0) is False
    other = Why(reason=Reason.NODE_HELD, message="n1 is cordoned", detail={"holds": ["h2"]})
    assert roving.record_blocked(aid, other, "scheduler", T0) is True
    assert [e.message for e in blocked_events(roving, aid)] == ["n1 is cordoned", "n1 is cordoned"]


def test_busy_nodes_told_behind_the_head_are_not_told_again_at_its_front_even_by_a_new_leader():
    roving = app()
    aid = submit(roving, cores=1)
    behind = Why(reason=Reason.BACKFILL_NO_FIT, message="all 2 usable nodes are busy")
    front = Why(reason=Reason.INSUFFICIENT_RESOURCES, message="all 2 usable nodes are busy")
    assert roving.record_blocked(aid, behind, "scheduler", T0) is True
    assert roving.record_blocked(aid, front, "scheduler", T0) is False  # the allocation's own record: no news
    assert [e.reason for e in blocked_events(roving, aid)] == ["BACKFILL_NO_FIT"]


def test_placed_work_gets_no_blocked_event_and_its_real_wait_since_ready_is_observed():
    roving, views, runner = control_plane()
    roving.register_node("n1", 4, 8 * GiB, {}, {}, "pool", "127.0.0.1", 9100, T0)
    count, total = (sample("roving_scheduler_ready_queue_wait_seconds_count"),
                    sample("roving_scheduler_ready_queue_wait_seconds_sum"))
    aid = submit(roving, cores=1, minutes_ago=2)
    runner.tick()
    assert roving.repository.get(aid).state.value == "RUNNING"
    assert blocked_events(roving, aid) == []
    assert sample("roving_scheduler_ready_queue_wait_seconds_count") == count + 1
    assert 119 <= sample("roving_scheduler_ready_queue_wait_seconds_sum") - total <= 180


def test_near_miss_gaps_are_published_after_every_pass():
    roving, views, runner = control_plane()
    roving.register_node("n1", 2, 4 * GiB, {}, {}, "pool", "127.0.0.1", 9100, T0)
    submit(roving, cores=4)
    decisions = runner.run_pass() if runner.tick() is None else None
    assert sample("roving_scheduler_near_miss_priority_gaps") == decisions.counters.near_miss_priority_gaps


def test_a_preemptor_that_evicts_has_its_blocked_time_observed_once():
    from types import SimpleNamespace

    from domain.scheduler import Decisions, Preemption

    now = datetime.now(UTC)
    done: list[str] = []
    roving = SimpleNamespace(preempt=lambda victim, text, by, at: done.append(f"evict {victim}"),
                             place=lambda aid, nodes, by, at, note: done.append(f"place {aid}: {note}") or 1)
    views = SimpleNamespace(queue=SimpleNamespace(ready_since=lambda aid: now - timedelta(seconds=90)))
    runner = SchedulerRunner(roving, views, None, None)
    preemptor, victim, node = uuid4(), uuid4(), uuid4()
    decisions = Decisions(preemptions=[Preemption(
        preemptor_id=str(preemptor), victim_ids=(str(victim),), node_ids=(str(node),),
        victim_texts=("Preempted by workflow W job hi",), preemptor_text="Preempted 1 lower-priority job on n1: preemptible")])
    count, total = (sample("roving_scheduler_blocked_seconds_before_eviction_count"),
                    sample("roving_scheduler_blocked_seconds_before_eviction_sum"))
    runner.commits.decisions(decisions, now)
    # its events say so
    assert done == [f"evict {victim}", f"place {preemptor}: Preempted 1 lower-priority job on n1: preemptible"]
    assert sample("roving_scheduler_blocked_seconds_before_eviction_count") == count + 1
    assert sample("roving_scheduler_blocked_seconds_before_eviction_sum") - total == 90


def test_a_placement_the_log_refuses_is_explained_and_counted_as_refused_not_placed():
    roving, views, runner = control_plane()
    roving.register_node("n1", 4, 4 * GiB, {}, {}, "pool", "127.0.0.1", 9100, T0)
    aid = submit(roving, cores=1)

    def refuse(placements, by, at):  # the log moved on since the pass decided: the commit refuses this placement
        return {allocation: "cannot place main: node n1 takes no new work: evict hold by admin"
                for allocation, _ in placements}

    roving.place_all = refuse
    runner.tick()
    why = runner.state.why(aid)
    assert why.reason is Reason.READY_TO_SCHEDULE
    assert "placement refused (cannot place main: node n1 takes no new work" in why.message
    stats = runner.state.last.stats
    assert (stats.get("placed"), stats.get("refused")) == (0, 1)


def test_the_scheduler_thread_outlives_a_log_outage_and_places_work_after_it():
    import time as clock

    from eventsourcing.persistence import OperationalError

    roving, views, runner = control_plane()
    roving.register_node("n1", 4, 4 * GiB, {}, {}, "pool", "127.0.0.1", 9100, T0)
    aid = submit(roving, cores=1)
    real, outage = roving.scheduler_config, {"left": 3}

    def config_while_down():
        if outage["left"]:
            outage["left"] -= 1
            raise OperationalError("the log is unavailable")
        return real()

    roving.scheduler_config = config_while_down
    runner.start()
    try:
        deadline = clock.monotonic() + 10
        while roving.repository.get(aid).state.value != "RUNNING" and clock.monotonic() < deadline:
            clock.sleep(0.05)
    finally:
        runner.stop()
    assert outage["left"] == 0
    assert roving.repository.get(aid).state.value == "RUNNING"


def test_a_passes_new_causes_are_written_in_one_commit():
    roving, views, runner = control_plane()
    roving.register_node("n1", 2, 4 * GiB, {}, {}, "pool", "127.0.0.1", 9100, T0)
    waiting = [submit(roving, cores=4) for _ in range(3)]
    saves = []
    original = roving.save
    roving.save = lambda *objs, **kw: saves.append(len(objs)) or original(*objs, **kw)
    runner.tick()
    roving.save = original
    assert all(len(blocked_events(roving, aid)) == 1 for aid in waiting)
    assert 3 in saves and saves.count(1) == 0  # the three causes in one save, not one save each

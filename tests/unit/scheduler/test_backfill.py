from datetime import timedelta

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.scheduler import Kind, Reason, RunningAllocation, SchedulerConfig, schedule
from tests.unit.scheduler.builders import T0, job, node, running, snap

CONFIG = SchedulerConfig()


def blocked_head_cluster():
    """Two 8-cpu nodes; n1 frees at +60 min, n2 at +120 min; the head needs a whole node."""
    nodes = [node("n1"), node("n2")]
    busy = [running("r1", ("n1",), cpu=6, ends_in_minutes=60), running("r2", ("n2",), cpu=6, ends_in_minutes=120)]
    head = job("head", cpu=8, organization_priority=100)
    return nodes, busy, head


def test_the_head_holds_a_reservation_starting_when_running_work_must_end():
    nodes, busy, head = blocked_head_cluster()
    d = schedule(snap([head], busy, nodes=nodes), CONFIG, T0)
    assert d.reservation.allocation_id == "head" and d.reservation.node_ids == ("n1",)
    assert d.reservation.estimated_start == T0 + timedelta(minutes=60)
    assert d.reasons["head"].reason is Reason.INSUFFICIENT_RESOURCES
    assert d.reasons["head"].detail["estimated_start"] == (T0 + timedelta(minutes=60)).isoformat()


def test_work_that_finishes_before_the_head_starts_is_backfilled_onto_its_nodes():
    nodes, busy, head = blocked_head_cluster()
    quick = job("quick", cpu=2, execute_timeout=30 * 60)
    d = schedule(snap([head, quick], busy, nodes=nodes), CONFIG, T0)
    [backfill] = d.backfills
    assert backfill.allocation_id == "quick" and backfill.head_id == "head"
    assert d.counters.backfilled == 1


def test_work_outlasting_the_head_start_may_use_only_capacity_the_head_does_not_need():
    nodes, busy, head = blocked_head_cluster()
    long = job("long", cpu=2, execute_timeout=5 * 3600)
    d = schedule(snap([head, long], busy, nodes=nodes), CONFIG, T0)
    assert [(b.allocation_id, b.node_ids, b.ends_before_head) for b in d.backfills] == [("long", ("n2",), False)]


def test_work_that_would_delay_the_head_waits_and_says_so():
    nodes = [node("n1")]
    busy = [running("r1", ("n1",), cpu=6, ends_in_minutes=60)]
    head = job("head", cpu=8, organization_priority=100)
    late = job("late", cpu=2, execute_timeout=2 * 3600)
    untimed = job("untimed", cpu=2, minutes_ago=1)
    d = schedule(snap([head, late, untimed], busy, nodes=nodes), CONFIG, T0)
    assert d.backfills == []
    assert d.reasons["late"].reason is Reason.BACKFILL_INELIGIBLE_WOULD_DELAY_HEAD
    assert d.reasons["untimed"].reason is Reason.BACKFILL_INELIGIBLE_NO_WALLTIME
    assert d.reasons["late"].detail["head"] == "head"


def test_work_that_fits_nowhere_behind_the_head_is_a_backfill_no_fit():
    nodes, busy, head = blocked_head_cluster()
    big = job("big", cpu=4, execute_timeout=600)
    d = schedule(snap([head, big], busy, nodes=nodes), CONFIG, T0)
    assert d.reasons["big"].reason is Reason.BACKFILL_NO_FIT


def test_services_are_never_backfilled():
    nodes, busy, head = blocked_head_cluster()
    service = job("svc", cpu=1, kind=Kind.SERVICE)
    d = schedule(snap([head, service], busy, nodes=nodes), CONFIG, T0)
    assert d.backfills == [] and d.reasons["svc"].reason is Reason.BLOCKED_BY_RESERVATION


def test_staging_work_is_backfilled_whenever_it_fits_even_without_a_timeout():
    nodes = [node("n1")]
    busy = [running("r1", ("n1",), cpu=6, ends_in_minutes=60)]
    head = job("head", cpu=8, organization_priority=100)
    stage_in = job("stage-in", cpu=1, kind=Kind.STAGING)
    d = schedule(snap([head, stage_in], busy, nodes=nodes), CONFIG, T0)
    assert [b.allocation_id for b in d.backfills] == ["stage-in"]


def test_with_backfill_off_nothing_passes_the_blocked_head():
    nodes, busy, head = blocked_head_cluster()
    quick = job("quick", cpu=1, execute_timeout=60)
    d = schedule(snap([head, quick], busy, nodes=nodes), SchedulerConfig(backfill_enabled=False), T0)
    assert d.backfills == [] and d.placements == []
    assert d.reasons["quick"].reason is Reason.BLOCKED_BY_RESERVATION
    assert d.reasons["quick"].detail["estimated_start"] == (T0 + timedelta(minutes=60)).isoformat()


def test_a_head_blocked_by_work_without_a_timeout_holds_its_nodes_whole():
    nodes = [node("n1", annotations={"pool": "a"}), node("other", annotations={"pool": "b"})]
    busy = [running("r1", ("n1",), cpu=6)]
    head = job("head", cpu=8, organization_priority=100, annotations={"pool": "a"})
    small = job("small", cpu=1, execute_timeout=60)
    d = schedule(snap([head, small], busy, nodes=nodes), CONFIG, T0)
    assert d.reservation.estimated_start is None
    assert [(b.allocation_id, b.node_ids) for b in d.backfills] == [("small", ("other",))]


def _start_after(decisions, snapshot, config):
    """Re-plan the head after the backfills have started: its estimated start."""
    started = []
    for b in decisions.backfills:
        a = next(q for q in snapshot.queued if q.id == b.allocation_id)
        deadline = T0 + timedelta(seconds=a.execute_timeout) if a.execute_timeout is not None else None
        fields = {f: getattr(a, f) for f in a.__struct_fields__}
        started.append(RunningAllocation(**fields, node_ids=b.node_ids, started_at=T0, deadline=deadline))
    head = next(q for q in snapshot.queued if q.id == decisions.reservation.allocation_id)
    again = msgspec.structs.replace(snapshot, queued=(head,), running=snapshot.running + tuple(started))
    return schedule(again, config, T0).reservation.estimated_start


requests = st.tuples(st.integers(1, 8), st.sampled_from([None, 10, 45, 90, 200]), st.booleans())


@settings(max_examples=60, deadline=None)
@given(busy=st.lists(st.tuples(st.integers(0, 3), st.integers(1, 4), st.integers(5, 180)), min_size=4, max_size=10),
       queue=st.lists(requests, min_size=1, max_size=12), head_cpu=st.integers(4, 8), head_nodes=st.integers(1, 2))
def test_backfill_never_moves_the_heads_estimated_start_later(busy, queue, head_cpu, head_nodes):
    nodes = [node(f"n{i}") for i in range(4)]
    load, used = [], [0] * 4
    for index, (n, cpu, minutes) in enumerate(busy):
        if used[n] + cpu <= 8:
            used[n] += cpu
            load.append(running(f"r{index}", (f"n{n}",), cpu=cpu, ends_in_minutes=minutes))
    head = job("head", cpu=head_cpu, nodes=head_nodes, organization_priority=100, exclusive=head_cpu == 7)
    others = [job(f"q{i}", cpu=cpu, execute_timeout=None if t is None else t * 60, exclusive=ex and cpu > 6)
              for i, (cpu, t, ex) in enumerate(queue)]
    snapshot = snap([head, *others], load, nodes=nodes)
    d = schedule(snapshot, CONFIG, T0)
    if d.reservation is None or d.reservation.allocation_id != "head" or d.reservation.estimated_start is None:
        return
    assert _start_after(d, snapshot, CONFIG) <= d.reservation.estimated_start

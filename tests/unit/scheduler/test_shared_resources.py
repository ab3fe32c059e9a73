"""Shared counted resources (licenses) in the pass: never over-committed, SHARED_RESOURCE naming the resource,
and the head's reservation keeping its share from backfill."""
from datetime import timedelta

from domain.scheduler import Reason, SchedulerConfig, schedule
from tests.unit.scheduler.builders import T0, job, node, running, snap

LICENSES = SchedulerConfig(shared_resources={"ansys": 4})


def test_work_takes_shared_resources_until_none_are_left():
    queued = [job(f"j{i}", shared={"ansys": 1}, minutes_ago=10 - i) for i in range(6)]
    d = schedule(snap(queued, nodes=[node("n1", cpu=32)]), LICENSES, T0)
    started = d.placed_nodes()
    assert len(started) == 4
    assert {d.reasons[f"j{i}"].reason for i in range(4, 6)} == {Reason.SHARED_RESOURCE}


def test_the_reason_names_the_resource_with_what_is_used_and_asked():
    busy = [running("r1", ("n1",), shared={"ansys": 3}, ends_in_minutes=30)]
    d = schedule(snap([job("two", shared={"ansys": 2})], busy, nodes=[node("n1", cpu=32)]), LICENSES, T0)
    why = d.reasons["two"]
    assert why.reason is Reason.SHARED_RESOURCE
    assert {k: why.detail[k] for k in ("resource", "asked", "free", "total", "in_use")} == \
        {"resource": "ansys", "asked": 2, "free": 1, "total": 4, "in_use": 3}
    assert "waiting for shared resource ansys: 3 of 4 in use, this asks 2" in why.message


def test_work_short_of_a_license_is_the_head_and_starts_when_the_license_comes_back():
    busy = [running("r1", ("n1",), shared={"ansys": 4}, ends_in_minutes=30)]
    d = schedule(snap([job("lic", shared={"ansys": 2}, organization_priority=10)], busy,
                      nodes=[node("n1", cpu=32)]), LICENSES, T0)
    assert d.reservation.allocation_id == "lic"
    assert d.reservation.estimated_start == T0 + timedelta(minutes=30)
    assert d.reasons["lic"].detail["estimated_start"] == (T0 + timedelta(minutes=30)).isoformat()


def test_long_backfill_cannot_take_the_license_the_head_waits_for():
    busy = [running("r1", ("n1",), shared={"ansys": 3}, ends_in_minutes=30)]
    head = job("head", shared={"ansys": 4}, organization_priority=10)
    long = job("long", shared={"ansys": 1}, execute_timeout=3 * 3600)
    short = job("short", shared={"ansys": 1}, execute_timeout=10 * 60, minutes_ago=-1)
    plain = job("plain", execute_timeout=3 * 3600, minutes_ago=-2)
    d = schedule(snap([head, long, short, plain], busy, nodes=[node("n1", cpu=32)]), LICENSES, T0)
    assert d.reservation.allocation_id == "head"
    assert sorted(b.allocation_id for b in d.backfills) == ["plain", "short"]
    assert d.reasons["long"].reason is Reason.SHARED_RESOURCE
    assert d.reasons["long"].detail["head"] == "head"


def test_a_head_blocked_on_nodes_keeps_its_license_from_long_backfill():
    busy = [running("r1", ("n1",), cpu=8, ends_in_minutes=30)]
    head = job("head", cpu=8, shared={"ansys": 3}, organization_priority=10)
    long = job("long", cpu=1, shared={"ansys": 2}, execute_timeout=3 * 3600)
    d = schedule(snap([head, long], busy, nodes=[node("n1"), node("n2", cpu=4)]), LICENSES, T0)
    assert d.reservation.allocation_id == "head"
    assert d.backfills == [] and d.reasons["long"].reason is Reason.SHARED_RESOURCE


def test_a_license_the_cluster_no_longer_has_holds_the_work_with_the_reason():
    d = schedule(snap([job("gone", shared={"fluent": 1}), job("many", shared={"ansys": 9})], nodes=[node("n1")]),
                 LICENSES, T0)
    assert d.placements == []
    assert d.reasons["gone"].detail == {"resource": "fluent", "asked": 1, "total": 0, "never_fits": True}
    assert "the cluster has no shared resource fluent (it has: ansys)" in d.reasons["gone"].message
    assert d.reasons["many"].detail["never_fits"] is True and d.reservation is None


def test_an_unknown_release_time_still_keeps_the_heads_share():
    busy = [running("r1", ("n1",), shared={"ansys": 3})]  # no execute timeout: no known end; one license free
    head = job("head", shared={"ansys": 2}, organization_priority=10)
    later = job("later", shared={"ansys": 1}, execute_timeout=60)
    d = schedule(snap([head, later], busy, nodes=[node("n1", cpu=32)]), LICENSES, T0)
    assert d.reservation.allocation_id == "head" and d.reservation.estimated_start is None
    assert d.placed_nodes() == {} and d.reasons["later"].reason is Reason.SHARED_RESOURCE


def test_backfill_off_nothing_passes_a_license_blocked_head():
    config = SchedulerConfig(shared_resources={"ansys": 1}, backfill_enabled=False)
    busy = [running("r1", ("n1",), shared={"ansys": 1}, ends_in_minutes=5)]
    d = schedule(snap([job("head", shared={"ansys": 1}, organization_priority=5), job("plain", minutes_ago=-1)],
                      busy, nodes=[node("n1")]), config, T0)
    assert d.placed_nodes() == {} and d.reasons["plain"].reason is Reason.BLOCKED_BY_RESERVATION

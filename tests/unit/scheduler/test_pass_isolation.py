"""One allocation the pass cannot compute with is set aside with its reason; the pass places the others."""
from __future__ import annotations

from datetime import datetime, timedelta

from domain.scheduler import QueuedAllocation, SchedulerConfig, schedule
from domain.scheduler.priority import UNRANKED, Evaluator
from domain.scheduler.reasons import Reason
from domain.scheduler.sanity import deadline
from domain.scheduler.snapshot import GroupPolicy
from tests.unit.scheduler.builders import T0, job, node, running, snap

INT64_MAX = 2**63 - 1
HUGE_TIMEOUT = 99999999999999999 * 3600  # `timeout: {execute: 99999999999999999h}`, accepted before the bounds


def placed(decisions) -> list[str]:
    return [p.allocation_id for p in decisions.placements] + [b.allocation_id for b in decisions.backfills]


def test_a_huge_execute_timeout_in_the_snapshot_is_set_aside_and_the_others_are_placed():
    huge = job("huge", execute_timeout=HUGE_TIMEOUT, minutes_ago=60)
    d = schedule(snap([huge, job("a"), job("b")], nodes=[node("n1")]), SchedulerConfig(), T0)
    assert sorted(placed(d)) == ["a", "b"]
    assert d.reasons["huge"].reason is Reason.INVALID_REQUEST
    assert d.reasons["huge"].detail == {"field": "execute_timeout"}
    assert d.counters.set_aside == 1


def test_a_huge_timeout_behind_a_reservation_does_not_break_backfill():
    """Backfill adds the timeout to now; before, this raised OverflowError and failed the whole pass."""
    blocker = running("r", ("n1",), cpu=8, ends_in_minutes=30)
    head = job("head", cpu=8, minutes_ago=120)
    huge = job("huge", cpu=1, execute_timeout=HUGE_TIMEOUT, minutes_ago=60)
    d = schedule(snap([head, huge, job("small", execute_timeout=60)], [blocker], nodes=[node("n1"), node("n2", cpu=2)]),
                 SchedulerConfig(), T0)
    assert d.reasons["huge"].reason is Reason.INVALID_REQUEST
    assert "small" in placed(d)


def test_int64_max_priorities_in_the_snapshot_are_set_aside_and_the_pass_completes():
    rich = job("rich", organization_priority=INT64_MAX, group_priority=INT64_MAX, user_priority=INT64_MAX)
    d = schedule(snap([rich, job("plain")], nodes=[node("n1")]), SchedulerConfig(), T0)
    assert placed(d) == ["plain"]
    why = d.reasons["rich"]
    assert why.reason is Reason.INVALID_REQUEST and "overflow" in why.message.lower()
    assert "rich" not in d.priorities


def test_a_priority_expression_that_divides_by_zero_sets_aside_only_the_work_it_fails_for():
    config = SchedulerConfig(priority="100 / (user + 1)")
    d = schedule(snap([job("bad", user_priority=-1), job("good", user_priority=1)], nodes=[node("n1")]), config, T0)
    assert placed(d) == ["good"]
    assert d.reasons["bad"].detail == {"field": "priority"}


def test_a_priority_that_is_not_finite_is_set_aside():
    config = SchedulerConfig(priority="waited_hours * 1e308 * 1e308")
    d = schedule(snap([job("old", minutes_ago=600)], nodes=[node("n1")]), config, T0)
    assert placed(d) == []
    assert "not a finite number" in d.reasons["old"].message


def _preemption_pass(victim_priority: int):
    config = SchedulerConfig(preemption_enabled=True, min_preemption_runtime_seconds=0, preemption_threshold=0)
    victim = running("victim", ("n1",), cpu=8, preemptible=True, group_id="g",
                     organization_priority=victim_priority, group_priority=victim_priority)
    urgent = job("urgent", cpu=8, group_id="g", organization_priority=1000)
    policies = (GroupPolicy(group_id="g", may_preempt=("g",)),)
    return schedule(snap([urgent], [victim], nodes=[node("n1")], group_policies=policies), config, T0)


def test_running_work_with_an_unrankable_priority_is_never_a_preemption_victim():
    assert [p.victim_ids for p in _preemption_pass(victim_priority=0).preemptions] == [("victim",)]
    d = _preemption_pass(victim_priority=INT64_MAX)
    assert d.preemptions == []
    assert d.reasons["urgent"].reason is not Reason.INVALID_REQUEST


def test_the_queue_listing_ranks_unevaluable_work_last_instead_of_failing():
    rich = job("rich", organization_priority=INT64_MAX, group_priority=INT64_MAX)
    assert Evaluator("organization + group")(rich, T0) == UNRANKED


def test_a_deadline_past_year_9999_is_no_known_end():
    assert deadline(T0, HUGE_TIMEOUT) is None
    assert deadline(T0, float("nan")) is None
    assert deadline(T0, 60) == T0 + timedelta(seconds=60)


def test_a_submission_time_without_a_time_zone_is_set_aside_not_a_failed_sort():
    naive = QueuedAllocation(id="naive", workflow_id="w", stage="naive", submitted_at=datetime(2025, 3, 1))
    d = schedule(snap([naive, job("a")], nodes=[node("n1")]), SchedulerConfig(), T0)
    assert placed(d) == ["a"]
    assert d.reasons["naive"].detail == {"field": "submitted_at"}

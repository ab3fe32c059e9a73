from domain.scheduler import Reason, SchedulerConfig, Why, blocked_events, schedule
from domain.scheduler.reasons import terminal
from tests.unit.scheduler.builders import T0, job, node, running, snap


def test_a_new_cause_needs_one_event_and_the_same_cause_next_tick_needs_none():
    first = {"a": Why(reason=Reason.INSUFFICIENT_RESOURCES, detail={"nodes_examined": 3})}
    again = {"a": Why(reason=Reason.INSUFFICIENT_RESOURCES, detail={"nodes_examined": 4})}
    assert blocked_events({}, first) == ["a"]
    assert blocked_events(first, again) == []


def test_waiting_behind_a_different_head_is_a_new_cause_but_a_new_estimate_is_not():
    behind_x = Why(reason=Reason.BLOCKED_BY_RESERVATION, detail={"head": "x", "estimated_start": "10:00"})
    later = Why(reason=Reason.BLOCKED_BY_RESERVATION, detail={"head": "x", "estimated_start": "11:00"})
    behind_y = Why(reason=Reason.BLOCKED_BY_RESERVATION, detail={"head": "y", "estimated_start": "11:00"})
    assert blocked_events({"a": behind_x}, {"a": later}) == []
    assert blocked_events({"a": later}, {"a": behind_y}) == ["a"]


def test_work_that_waits_behind_the_head_and_then_at_its_front_for_busy_nodes_is_told_once():
    # as a queue of like jobs drains, each one waits first behind the head (no backfill fit), then as the head
    # itself: the same "all 2 usable nodes are busy" both times, so one activity line, not two
    queue = [job("a", cpu=4, organization_priority=5), job("b", cpu=4)]
    busy = [running("r", ("n1",), cpu=4)]
    first = schedule(snap(queue, busy, nodes=[node("n1", cpu=4)]), SchedulerConfig(), T0).reasons
    assert (first["a"].reason, first["b"].reason) == (Reason.INSUFFICIENT_RESOURCES, Reason.BACKFILL_NO_FIT)
    assert first["a"].message == first["b"].message
    then = schedule(snap(queue[1:], busy, nodes=[node("n1", cpu=4)]), SchedulerConfig(), T0).reasons
    assert then["b"].reason is Reason.INSUFFICIENT_RESOURCES
    assert blocked_events(first, then) == []
    assert blocked_events({}, first) == ["a", "b"]


def test_a_reason_that_says_something_else_is_still_news_after_busy_nodes():
    busy = Why(reason=Reason.BACKFILL_NO_FIT, message="all 2 usable nodes are busy")
    held = Why(reason=Reason.NODE_HELD, message="n1 is cordoned", detail={"holds": ["h1"]})
    no_walltime = Why(reason=Reason.BACKFILL_INELIGIBLE_NO_WALLTIME, message="fits now, but ...")
    assert blocked_events({"a": busy, "b": busy}, {"a": held, "b": no_walltime}) == ["a", "b"]


def test_running_or_ready_allocations_never_need_a_blocked_event():
    current = {"a": Why(reason=Reason.READY_TO_SCHEDULE), "b": Why(reason=Reason.RUNNING)}
    assert blocked_events({}, current) == []


def test_every_queued_and_running_allocation_gets_a_reason_from_a_pass():
    busy = [running("r", ("n1",), cpu=8)]
    queue = [job("a", cpu=8, organization_priority=5), job("b", annotations={"gpu": "h100"}), job("c", cpu=1)]
    d = schedule(snap(queue, busy, nodes=[node("n1")]), SchedulerConfig(), T0)
    assert {k: v.reason for k, v in d.reasons.items()} == {
        "r": Reason.RUNNING, "a": Reason.INSUFFICIENT_RESOURCES,
        "b": Reason.NODE_ANNOTATIONS_MISMATCH, "c": Reason.BACKFILL_NO_FIT}
    assert d.counters.considered == 3 and d.counters.blocked == 3


def test_settled_states_map_to_their_reasons():
    assert terminal("CANCELED").reason is Reason.CANCELLED
    assert terminal("FINISHED").reason is Reason.FINISHED
    assert terminal("EVICTED").reason is Reason.PREEMPTED

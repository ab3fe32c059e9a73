from datetime import timedelta

import pytest

from domain.scheduler import SchedulerConfig, schedule
from domain.scheduler.priority import (
    Evaluator,
    PriorityInputs,
    check_workflow_priority,
    priority_set_text,
    priority_updated_texts,
)
from tests.unit.scheduler.builders import T0, job, node, snap


def test_by_default_the_organization_group_user_and_workflow_priorities_add_up():
    a = job("a", organization_priority=5, group_priority=2, user_priority=1, workflow_priority=-3)
    assert Evaluator(SchedulerConfig().priority)(a, T0) == 5


def test_by_default_each_hour_waited_adds_one():
    a = job("a", minutes_ago=150)
    assert Evaluator(SchedulerConfig().priority)(a, T0) == 2


def test_the_higher_priority_allocation_gets_the_only_free_node():
    low = job("low", cpu=8, minutes_ago=60 * 5)
    high = job("high", cpu=8, organization_priority=10)
    d = schedule(snap([low, high], nodes=[node("n1")]), SchedulerConfig(), T0)
    assert [p.allocation_id for p in d.placements] == ["high"]
    assert d.priorities == {"low": 5.0, "high": 10.0}


def test_a_custom_expression_can_rank_by_size_using_typed_inputs():
    config = SchedulerConfig(priority="double(cpu) * 0.5 + waited_hours")
    small, big = job("small", cpu=2), job("big", cpu=6)
    d = schedule(snap([small, big], nodes=[node("n1", cpu=6)]), config, T0)
    assert [p.allocation_id for p in d.placements] == ["big"]


def test_at_equal_priority_the_earlier_submission_goes_first():
    first = job("first", cpu=8, minutes_ago=10)
    second = job("second", cpu=8, minutes_ago=5)
    d = schedule(snap([second, first], nodes=[node("n1")]), SchedulerConfig(), T0)
    assert [p.allocation_id for p in d.placements] == ["first"]


def test_the_priority_set_text_names_every_input():
    text = priority_set_text(PriorityInputs(workflow=0, organization=5, group=2, user=1))
    assert text == "Priority set (workflow: 0, organization: 5, group: 2, user: 1)"


def test_only_inputs_that_moved_produce_an_update_text():
    before = PriorityInputs(organization=5, group=2)
    after = PriorityInputs(organization=10, group=2)
    assert priority_updated_texts(before, after) == ["Priority updated: organization 5 -> 10"]


@pytest.mark.parametrize("value, accepted", [(0, True), (-5, True), (1, False)])
def test_a_workflow_may_lower_but_never_raise_its_own_priority(value, accepted):
    assert (check_workflow_priority(value) is None) == accepted


def test_waited_time_before_submission_never_goes_negative():
    a = job("a", minutes_ago=-30)
    assert Evaluator("waited_seconds")(a, T0 - timedelta(hours=1)) == 0

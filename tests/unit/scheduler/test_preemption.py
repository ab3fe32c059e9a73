from datetime import timedelta

from domain.scheduler import GroupPolicy, Reason, SchedulerConfig, schedule
from tests.unit.scheduler.builders import T0, job, node, running, snap

ON = SchedulerConfig(preemption_enabled=True)
ALLOW = (GroupPolicy(group_id="prod", may_preempt=("batch",)),)


def victim(job_id="v", node_id="n1", cpu=8, **fields):
    fields.setdefault("group_id", "batch")
    fields.setdefault("preemptible", True)
    fields.setdefault("started_minutes_ago", 30)
    return running(job_id, (node_id,), cpu=cpu, **fields)


def urgent(**fields):
    return job("urgent", cpu=8, group_id="prod", organization_priority=50, workflow_id="wf-u", **fields)


def decide(queue, busy, config=ON, policies=ALLOW, nodes=None):
    return schedule(snap(queue, busy, nodes=nodes or [node("n1")], group_policies=policies), config, T0)


def test_a_blocked_allocation_preempts_an_allowed_victim_and_both_sides_get_a_text():
    d = decide([urgent()], [victim()])
    [p] = d.preemptions
    assert (p.preemptor_id, p.victim_ids, p.node_ids) == ("urgent", ("v",), ("n1",))
    assert p.victim_texts == ("Preempted by a higher-priority job (priority 50)",)
    assert p.preemptor_text == ("Preempted 1 lower-priority job on n1: preemptible, with a priority below this "
                                "one's 50 by more than the gap of 10")
    assert d.reasons["v"].reason is Reason.PREEMPTED and d.counters.preempted == 1


def test_preemption_is_off_by_default():
    assert decide([urgent()], [victim()], config=SchedulerConfig()).preemptions == []


def test_nothing_is_preempted_until_an_allow_list_is_configured():
    assert decide([urgent()], [victim()], policies=()).preemptions == []


def test_a_victim_outside_the_allow_list_is_spared():
    assert decide([urgent()], [victim(group_id="research")]).preemptions == []


def test_a_victim_that_is_not_preemptible_is_spared():
    assert decide([urgent()], [victim(preemptible=False)]).preemptions == []


def test_a_victim_younger_than_the_minimum_runtime_is_spared():
    assert decide([urgent()], [victim(started_minutes_ago=0.5)]).preemptions == []


def test_a_victim_within_the_priority_gap_is_spared_and_counted_as_a_near_miss():
    d = decide([urgent()], [victim(organization_priority=45)])
    assert d.preemptions == [] and d.counters.near_miss_priority_gaps == 1


def test_a_pool_below_the_utilization_threshold_is_not_preempted():
    d = decide([urgent()], [victim(cpu=5)], config=SchedulerConfig(preemption_enabled=True,
                                                                  preemption_threshold=70))
    assert d.preemptions == []


def test_eviction_that_would_not_seat_the_preemptor_does_not_happen():
    busy = [victim(cpu=4), running("steady", ("n1",), cpu=4, group_id="research")]
    assert decide([urgent()], busy).preemptions == []


def test_one_victim_per_blocked_allocation_unless_multi_victim_mode_is_on():
    busy = [victim("v1", cpu=4), victim("v2", cpu=4, organization_priority=1), victim("v3", "n2", cpu=2),
            victim("v4", "n2", cpu=2), victim("v5", "n2", cpu=4)]
    nodes = [node("n1"), node("n2")]
    assert decide([urgent()], busy, nodes=nodes).preemptions == []
    multi = SchedulerConfig(preemption_enabled=True, preemption_multi_victim_enabled=True)
    [p] = decide([urgent()], busy, config=multi, nodes=nodes).preemptions
    assert set(p.victim_ids) == {"v1", "v2"} and p.node_ids == ("n1",)


def test_multi_victim_eviction_is_bounded_per_tick():
    busy = [victim(f"v{i}", cpu=1) for i in range(8)]
    capped = SchedulerConfig(preemption_enabled=True, preemption_multi_victim_enabled=True,
                             max_evictions_per_tick=4)
    assert decide([urgent()], busy, config=capped).preemptions == []


def test_a_victim_preempted_too_often_in_the_window_is_protected_and_the_reason_says_so():
    recent = tuple(T0 - timedelta(minutes=m) for m in (5, 20, 40))
    d = decide([urgent()], [victim(preemptions=recent)])
    assert d.preemptions == []
    why = d.reasons["urgent"]
    assert why.reason is Reason.PREEMPTION_PROTECTED and why.detail["victims"] == ["v"]
    assert "preempted 3 times" in why.message


def test_old_preemptions_outside_the_window_do_not_protect():
    old = tuple(T0 - timedelta(hours=h) for h in (2, 3, 4))
    assert len(decide([urgent()], [victim(preemptions=old)]).preemptions) == 1


def test_the_cheapest_victim_is_chosen_first():
    busy = [victim("pricey", "n1", organization_priority=20), victim("cheap", "n2", organization_priority=0)]
    [p] = decide([urgent()], busy, nodes=[node("n1"), node("n2")]).preemptions
    assert p.victim_ids == ("cheap",)


def test_the_preemptors_text_counts_its_victims_without_naming_another_tenants_workflow_or_stage():
    busy = [victim("secret-a", cpu=4, workflow_id="wf-other-tenant"), victim("secret-b", cpu=4)]
    multi = SchedulerConfig(preemption_enabled=True, preemption_multi_victim_enabled=True)
    [p] = decide([urgent()], busy, config=multi).preemptions
    assert len(p.victim_ids) == 2
    assert p.preemptor_text == ("Preempted 2 lower-priority jobs on n1: preemptible, with a priority below this "
                                "one's 50 by more than the gap of 10")


def test_a_victims_text_names_no_workflow_or_stage_of_the_preemptor():
    [p] = decide([job("secret-stage", cpu=8, group_id="prod", organization_priority=50, workflow_id="wf-secret")],
                 [victim()]).preemptions
    assert "secret" not in p.victim_texts[0] and "wf-" not in p.victim_texts[0]

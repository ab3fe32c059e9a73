"""The scheduler plans with provisioners' templates as virtual nodes: asks, packing, maxNodes, arrival times, why."""

from datetime import timedelta

from domain.scheduler import NodeTemplate, PendingNode, Reason, SchedulerConfig, blocked_events, schedule
from domain.scheduler.decisions import ProvisionAsk, Unneeded
from tests.unit.scheduler.builders import T0, GiB, job, node, running, snap

CONFIG = SchedulerConfig()


def template(name="elastic", cpu=4, memory=4 * GiB, max_nodes=2, expected=30.0, **fields) -> NodeTemplate:
    return NodeTemplate(provisioner=name, cpu=cpu, memory=memory, max_nodes=max_nodes, expected_seconds=expected,
                        **fields)


def pending(request_id="elastic-1", state="REQUESTED", seconds_ago=10, **fields) -> PendingNode:
    asked = T0 - timedelta(seconds=seconds_ago)
    return PendingNode(request_id=request_id, state=state, requested_at=asked, expected_at=asked + timedelta(seconds=30),
                       **fields)


def test_work_no_node_can_hold_asks_a_provisioner_for_one():
    d = schedule(snap([job("j1", cpu=2)], templates=(template(),)), CONFIG, T0)
    assert d.provision == [ProvisionAsk(provisioner="elastic", reasons=("j1",))]
    why = d.reasons["j1"]
    assert why.reason is Reason.WAITING_FOR_PROVISION
    assert why.detail["provisioner"] == "elastic" and why.detail["state"] == "NEW"
    assert why.detail["template"]["cpu"] == 4
    assert why.detail["expected_at"] == (T0 + timedelta(seconds=30)).isoformat()
    assert d.counters.waiting_for_provision == 1


def test_a_node_being_made_takes_the_work_again_and_nothing_is_asked_twice():
    t = template(pending=(pending(seconds_ago=12),))
    d = schedule(snap([job("j1", cpu=2)], templates=(t,)), CONFIG, T0)
    assert d.provision == [] and d.unneeded == []
    why = d.reasons["j1"]
    assert why.detail["request"] == "elastic-1" and why.detail["state"] == "REQUESTED"
    assert why.detail["age_seconds"] == 12.0
    assert "elastic-1" in why.message and "asked 12s ago" in why.message


def test_small_work_is_packed_onto_one_new_node():
    jobs = [job(f"j{i}", cpu=1, minutes_ago=10 - i) for i in range(1, 5)]
    d = schedule(snap(jobs, templates=(template(cpu=4),)), CONFIG, T0)
    assert d.provision == [ProvisionAsk(provisioner="elastic", reasons=("j1",))]
    assert all(d.reasons[a.id].reason is Reason.WAITING_FOR_PROVISION for a in jobs)


def test_max_nodes_counts_nodes_made_and_being_made():
    t = template(max_nodes=2, nodes=1, pending=(pending(),))
    d = schedule(snap([job("big", cpu=4), job("second", cpu=4)], templates=(t,)), CONFIG, T0)
    assert d.provision == []
    assert d.reasons["big"].reason is Reason.WAITING_FOR_PROVISION
    second = d.reasons["second"]
    assert second.reason is Reason.INSUFFICIENT_RESOURCES
    assert second.detail["provisioners_full"] == ["elastic"] and "maxNodes 2" in second.message


def test_work_a_real_node_can_take_now_never_asks():
    d = schedule(snap([job("j1", cpu=2)], nodes=[node("n1", cpu=4)], templates=(template(),)), CONFIG, T0)
    assert [p.allocation_id for p in d.placements] == ["j1"] and d.provision == []


def test_the_head_waits_for_real_nodes_that_free_before_a_new_one_could_arrive():
    busy = [running("r1", ("n1",), cpu=8, ends_in_minutes=1)]
    t = template(cpu=8, memory=32 * GiB, expected=600)
    d = schedule(snap([job("head", cpu=8)], busy, nodes=[node("n1")], templates=(t,)), CONFIG, T0)
    assert d.provision == []
    assert d.reservation.allocation_id == "head"
    assert d.reasons["head"].reason is Reason.INSUFFICIENT_RESOURCES


def test_a_head_waiting_for_a_new_node_holds_no_real_node_so_later_work_runs_there():
    busy = [running("r1", ("n1",), cpu=4, ends_in_minutes=120)]
    head = job("head", cpu=8, organization_priority=100)
    untimed = job("untimed", cpu=2)  # no execute timeout: a reservation on n1 would keep it off
    t = template(cpu=8, memory=32 * GiB, expected=60)
    d = schedule(snap([head, untimed], busy, nodes=[node("n1")], templates=(t,)), CONFIG, T0)
    assert d.provision == [ProvisionAsk(provisioner="elastic", reasons=("head",))]
    assert d.reservation is None
    assert [p.allocation_id for p in d.placements] == ["untimed"]


def test_a_node_being_made_counts_as_arriving_at_its_expected_time():
    """A pending node expected in 20 s beats real capacity freeing in 30 min; one expected later than it does not."""
    busy = [running("r1", ("n1",), cpu=8, ends_in_minutes=30)]
    soon = template(cpu=8, memory=32 * GiB, pending=(pending(seconds_ago=10),))
    d = schedule(snap([job("head", cpu=8)], busy, nodes=[node("n1")], templates=(soon,)), CONFIG, T0)
    assert d.reasons["head"].detail["request"] == "elastic-1"
    late = template(cpu=8, memory=32 * GiB, expected=3600, pending=(pending(seconds_ago=10),))
    d = schedule(snap([job("head", cpu=8)], busy, nodes=[node("n1")], templates=(late,)), CONFIG, T0)
    assert d.reasons["head"].reason is Reason.INSUFFICIENT_RESOURCES
    assert d.unneeded == [Unneeded(provisioner="elastic", request_id="elastic-1")]


def test_annotations_devices_and_segments_choose_the_template():
    gpu = template("gpu", cpu=8, memory=32 * GiB, devices={"nvidia.com/gpu": 4}, annotations={"pool": "gpu"})
    cpu = template("cpu", cpu=8, memory=32 * GiB, annotations={"pool": "cpu"}, segment="s1")
    queued = [job("train", devices={"nvidia.com/gpu": 2}), job("etl", annotations={"pool": "cpu"}, segments=("s1",)),
              job("nowhere", annotations={"pool": "tpu"}), job("pinned", volume_node="n9")]
    d = schedule(snap(queued, templates=(gpu, cpu)), CONFIG, T0)
    assert sorted((p.provisioner, p.reasons) for p in d.provision) == [("cpu", ("etl",)), ("gpu", ("train",))]
    assert d.reasons["nowhere"].reason is Reason.NODE_ANNOTATIONS_MISMATCH
    assert d.reasons["pinned"].reason is not Reason.WAITING_FOR_PROVISION


def test_multi_node_work_asks_for_as_many_nodes_as_it_spans():
    d = schedule(snap([job("mpi", cpu=4, nodes=2)], templates=(template(cpu=4, max_nodes=3),)), CONFIG, T0)
    assert d.provision == [ProvisionAsk(provisioner="elastic", reasons=("mpi", "mpi"))]
    d = schedule(snap([job("mpi", cpu=4, nodes=3)], templates=(template(cpu=4, max_nodes=2),)), CONFIG, T0)
    assert d.provision == []


def test_requests_nothing_waits_for_are_unneeded_but_nodes_already_being_made_are_not():
    t = template(pending=(pending("elastic-1"), pending("elastic-2", state="CREATING"),
                          pending("elastic-3", state="FAILED", attempts=2, last_error="quota")))
    d = schedule(snap([], templates=(t,)), CONFIG, T0)
    assert d.unneeded == [Unneeded(provisioner="elastic", request_id="elastic-1"),
                          Unneeded(provisioner="elastic", request_id="elastic-3")]


def test_why_reports_a_failed_attempt_and_its_retry():
    retry = T0 + timedelta(seconds=40)
    t = template(pending=(pending(state="FAILED", attempts=2, last_error="create exited 3: quota", retry_at=retry),))
    why = schedule(snap([job("j1")], templates=(t,)), CONFIG, T0).reasons["j1"]
    assert why.detail["state"] == "FAILED" and why.detail["attempts"] == 2
    assert why.detail["last_error"] == "create exited 3: quota" and "quota" in why.message
    assert why.detail["expected_at"] == (retry + timedelta(seconds=30)).isoformat()


def test_a_new_blocked_event_only_when_the_request_or_its_state_changes():
    asked = schedule(snap([job("j1")], templates=(template(),)), CONFIG, T0).reasons
    requested = schedule(snap([job("j1")], templates=(template(pending=(pending(seconds_ago=1),)),)), CONFIG, T0).reasons
    older = schedule(snap([job("j1")], templates=(template(pending=(pending(seconds_ago=9),)),)), CONFIG, T0).reasons
    creating = schedule(snap([job("j1")], templates=(template(pending=(pending(state="CREATING"),)),)), CONFIG, T0)
    assert blocked_events(asked, requested) == ["j1"]
    assert blocked_events(requested, older) == []
    assert blocked_events(older, creating.reasons) == ["j1"]


def test_a_shape_that_found_no_room_does_not_keep_smaller_work_off_a_node_being_made():
    jobs = [job("j1", cpu=3, minutes_ago=3), job("j2", cpu=2, minutes_ago=2), job("j3", cpu=1, minutes_ago=1),
            job("j4", cpu=2, minutes_ago=0)]
    d = schedule(snap(jobs, templates=(template(cpu=4, max_nodes=1),)), CONFIG, T0)
    assert d.provision == [ProvisionAsk(provisioner="elastic", reasons=("j1",))]
    assert [d.reasons[j].reason for j in ("j1", "j2", "j3", "j4")] == [
        Reason.WAITING_FOR_PROVISION, Reason.INSUFFICIENT_RESOURCES, Reason.WAITING_FOR_PROVISION,
        Reason.INSUFFICIENT_RESOURCES]

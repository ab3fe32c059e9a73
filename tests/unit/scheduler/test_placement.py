from domain.scheduler import (
    Definition,
    GroupPolicy,
    Hold,
    HoldEffect,
    HoldSource,
    Kind,
    NodeShape,
    NodeStatus,
    Reason,
    SchedulerConfig,
    schedule,
)
from domain.scheduler.feasibility import check_feasible
from tests.unit.scheduler.builders import T0, GiB, job, node, running, snap

CONFIG = SchedulerConfig()


def placed(d):
    return {p.allocation_id: p.node_ids for p in d.placements}


def test_a_held_node_takes_no_new_work_and_the_reason_names_the_hold():
    hold = Hold(id="h1", effect=HoldEffect.CORDON, source=HoldSource.ADMIN, reason="bios update", by="alice")
    d = schedule(snap([job("a")], nodes=[node("n1", holds=(hold,))]), CONFIG, T0)
    assert placed(d) == {}
    why = d.reasons["a"]
    assert why.reason is Reason.NODE_HELD
    assert why.detail["holds"][0] == {"node": "n1", "hold": "h1", "effect": "cordon", "source": "admin",
                                      "by": "alice", "reason": "bios update"}


def test_nodes_that_are_not_ready_are_skipped():
    nodes = [node("n1", status=NodeStatus.OFFLINE), node("n2", status=NodeStatus.NOT_READY), node("n3")]
    assert placed(schedule(snap([job("a")], nodes=nodes), CONFIG, T0)) == {"a": ("n3",)}


def test_annotations_match_strictly_unless_ignored():
    a = job("a", annotations={"gpu.model": "h100", "team": "vision"})
    nodes = [node("n1", annotations={"gpu.model": "a100"}), node("n2", annotations={"gpu.model": "h100"})]
    strict = schedule(snap([a], nodes=nodes), CONFIG, T0)
    assert strict.reasons["a"].reason is Reason.NODE_ANNOTATIONS_MISMATCH
    relaxed = schedule(snap([a], nodes=nodes), SchedulerConfig(ignored_annotations=("team",)), T0)
    assert placed(relaxed) == {"a": ("n2",)}


def test_a_node_lacking_a_device_is_skipped_without_aborting_the_pass():
    gpu_job = job("gpu", devices={"nvidia.com/gpu": 2}, organization_priority=5)
    cpu_job = job("cpu")
    nodes = [node("plain"), node("gpu1", devices={"nvidia.com/gpu": 4})]
    assert placed(schedule(snap([gpu_job, cpu_job], nodes=nodes), CONFIG, T0)) == {
        "gpu": ("gpu1",), "cpu": ("plain",)}


def test_a_job_runs_only_in_the_segment_of_every_volume_it_mounts():
    a = job("a", segments=("east",))
    nodes = [node("w1", segment="west"), node("e1", segment="east")]
    assert placed(schedule(snap([a], nodes=nodes), CONFIG, T0)) == {"a": ("e1",)}
    split = job("split", segments=("east", "west"))
    d = schedule(snap([split], nodes=nodes), CONFIG, T0)
    assert d.reasons["split"].reason is Reason.INSUFFICIENT_RESOURCES


def test_an_exclusive_job_needs_an_empty_node_and_then_has_it_alone():
    busy = running("r", ("n1",), cpu=1)
    ex, other = job("ex", exclusive=True, organization_priority=5), job("other")
    d = schedule(snap([ex, other], [busy], nodes=[node("n1"), node("n2")]), CONFIG, T0)
    assert placed(d) == {"ex": ("n2",), "other": ("n1",)}


def test_two_services_asking_the_same_host_port_never_share_a_node():
    s1 = job("s1", kind=Kind.SERVICE, host_ports=(8080,), minutes_ago=2)
    s2 = job("s2", kind=Kind.SERVICE, host_ports=(8080,), minutes_ago=1)
    d = schedule(snap([s1, s2], nodes=[node("n1"), node("n2")]), CONFIG, T0)
    assert set(placed(d)) == {"s1", "s2"} and placed(d)["s1"] != placed(d)["s2"]
    alone = schedule(snap([s1, s2], nodes=[node("n1")]), SchedulerConfig(backfill_enabled=False), T0)
    assert placed(alone) == {"s1": ("n1",)}
    assert alone.reasons["s2"].reason is Reason.SERVICE_POOL_AT_CAPACITY


def test_a_multinode_job_gets_all_its_nodes_at_once_or_none():
    wide = job("wide", cpu=8, nodes=3)
    two_free = schedule(snap([wide], nodes=[node("n1"), node("n2")]), CONFIG, T0)
    assert placed(two_free) == {} and two_free.reasons["wide"].reason is Reason.INSUFFICIENT_RESOURCES
    three = schedule(snap([wide], nodes=[node("n1"), node("n2"), node("n3")]), CONFIG, T0)
    assert placed(three) == {"wide": ("n1", "n2", "n3")}


def test_max_nodes_is_a_real_cap_on_a_definitions_pool():
    d1 = Definition(id="small", max_nodes=1, shape=NodeShape(cpu=8, memory=32 * GiB))
    nodes = [node("n1", definition_id="small"), node("n2", definition_id="small")]
    d = schedule(snap([job("a", cpu=8), job("b", cpu=8)], nodes=nodes, definitions=(d1,)), CONFIG, T0)
    assert list(placed(d).values()) == [("n1",)]


def test_insufficient_resources_says_what_fell_short_on_the_roomiest_node():
    nodes = [node("n1"), node("n2")]
    full = [running("r1", ("n1",), cpu=7), running("r2", ("n2",), cpu=6)]
    d = schedule(snap([job("a", cpu=4)], full, nodes=nodes), CONFIG, T0)
    why = d.reasons["a"]
    assert why.reason is Reason.INSUFFICIENT_RESOURCES
    assert why.detail["roomiest_node"] == "n2" and why.detail["short_on_roomiest"] == {"cpu": 2}
    assert why.detail["nodes_examined"] == 2


def test_waiting_on_a_dependency_is_reported_with_the_stage_it_waits_for():
    from domain.scheduler import Dependency
    a = job("a", waiting_on=Dependency(stages=("prepare",), condition="FINISHED"))
    d = schedule(snap([a], nodes=[node("n1")]), CONFIG, T0)
    assert placed(d) == {} and d.reasons["a"].reason is Reason.WAITING_DEPENDENCY
    assert d.reasons["a"].detail["stages"] == ["prepare"]


GPU = Definition(id="gpu", annotations={"gpu.model": "h100"}, max_nodes=4,
                 shape=NodeShape(cpu=64, memory=512 * GiB, devices={"nvidia.com/gpu": 8}))
CPU = Definition(id="cpu", max_nodes=100, shape=NodeShape(cpu=32, memory=128 * GiB))


def test_submission_is_accepted_when_some_definition_could_hold_the_job():
    assert check_feasible(job("a", cpu=32), [GPU, CPU]) is None


def test_submission_is_rejected_naming_the_largest_node_and_each_definitions_reason():
    too_big = job("a", cpu=128)
    infeasible = check_feasible(too_big, [GPU, CPU])
    assert infeasible.largest_node["definition"] == "gpu"
    assert infeasible.rejections == {"gpu": "cpu 128 > 64 per node", "cpu": "cpu 128 > 32 per node"}
    assert infeasible.request["cpu"] == 128 and "cpu 128 > 64" in infeasible.message()


def test_submission_asking_more_nodes_than_max_nodes_is_rejected():
    wide = job("w", annotations={"gpu.model": "h100"}, devices={"nvidia.com/gpu": 8}, nodes=5)
    infeasible = check_feasible(wide, [GPU, CPU])
    assert infeasible.rejections["gpu"] == "needs 5 nodes, maxNodes is 4"
    assert infeasible.rejections["cpu"] == "annotation gpu.model=h100 not offered"


def test_group_policies_default_to_preempting_nothing():
    assert GroupPolicy(group_id="g").may_preempt == ()

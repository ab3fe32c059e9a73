"""A multinode GPU job's nodes are all in one NVLink domain (the `nvidia.com/gpu.clique` node annotation); `why`
says when no domain has room; CPU-only gangs and nodes outside every domain place as before."""

from domain.scheduler import Reason, SchedulerConfig, schedule
from domain.scheduler.nvlink import NVLINK_DOMAIN
from tests.unit.scheduler.builders import T0, job, node, running, snap

CONFIG = SchedulerConfig()
GPU = {"nvidia.com/gpu": 4}


def gpu_node(name, clique=None, **fields):
    annotations = {NVLINK_DOMAIN: clique} if clique else {}
    return node(name, devices=dict(GPU), annotations=annotations, **fields)


def gang(job_id="train", nodes=2, gpus=4, **fields):
    return job(job_id, cpu=2, nodes=nodes, devices={"nvidia.com/gpu": gpus}, **fields)


def placed(d):
    return {p.allocation_id: p.node_ids for p in d.placements}


def test_a_gpu_gang_skips_the_first_free_nodes_when_they_straddle_two_domains():
    nodes = [gpu_node("a1", "clique-a"), gpu_node("a2", "clique-a"), gpu_node("b1", "clique-b"),
             gpu_node("b2", "clique-b")]
    busy = [running("r", ("a1",), cpu=1, devices={"nvidia.com/gpu": 4})]  # first fit alone would take a2 and b1
    d = schedule(snap([gang()], busy, nodes=nodes), CONFIG, T0)
    assert placed(d) == {"train": ("b1", "b2")}


def test_why_says_no_domain_could_ever_hold_the_gang_when_each_has_too_few_nodes():
    nodes = [gpu_node("a1", "clique-a"), gpu_node("b1", "clique-b"), gpu_node("c1", "clique-c")]
    d = schedule(snap([gang(nodes=2)], nodes=nodes), CONFIG, T0)
    why = d.reasons["train"]
    assert placed(d) == {} and why.reason is Reason.INSUFFICIENT_RESOURCES
    assert why.message == (f"no NVLink domain ({NVLINK_DOMAIN}) has 2 nodes that could hold it even when idle "
                           "(clique-a: 1, clique-b: 1, clique-c: 1)")
    assert why.detail["nvlink_domains"] == {"clique-a": 1, "clique-b": 1, "clique-c": 1}


def test_why_says_no_domain_has_room_now_when_the_free_nodes_are_split_between_domains():
    nodes = [gpu_node("a1", "clique-a"), gpu_node("a2", "clique-a"), gpu_node("b1", "clique-b"),
             gpu_node("b2", "clique-b")]
    busy = [running("ra", ("a1",), cpu=1, devices={"nvidia.com/gpu": 4}),
            running("rb", ("b2",), cpu=1, devices={"nvidia.com/gpu": 4})]
    d = schedule(snap([gang()], busy, nodes=nodes), CONFIG, T0)
    assert placed(d) == {}
    assert d.reasons["train"].message == (f"no NVLink domain ({NVLINK_DOMAIN}) has 2 nodes that could hold it now "
                                          "(clique-a: 1, clique-b: 1)")


def test_a_cpu_only_gang_may_span_domains():
    nodes = [gpu_node("a1", "clique-a"), gpu_node("b1", "clique-b")]
    d = schedule(snap([job("mpi", cpu=2, nodes=2)], nodes=nodes), CONFIG, T0)
    assert sorted(placed(d)["mpi"]) == ["a1", "b1"]


def test_nodes_outside_every_domain_hold_a_gpu_gang_together_but_never_beside_a_domain_node():
    plain = schedule(snap([gang()], nodes=[gpu_node("p1"), gpu_node("p2")]), CONFIG, T0)
    assert sorted(placed(plain)["train"]) == ["p1", "p2"]
    mixed = schedule(snap([gang()], nodes=[gpu_node("a1", "clique-a"), gpu_node("p1")]), CONFIG, T0)
    assert placed(mixed) == {} and "(none): 1" in mixed.reasons["train"].message


def test_the_head_gangs_reservation_holds_nodes_of_one_domain():
    nodes = [gpu_node("a1", "clique-a"), gpu_node("a2", "clique-a"), gpu_node("b1", "clique-b"),
             gpu_node("b2", "clique-b")]
    busy = [running("ra", ("a1",), cpu=1, devices={"nvidia.com/gpu": 4}, ends_in_minutes=10),
            running("rb", ("b2",), cpu=1, devices={"nvidia.com/gpu": 4}, ends_in_minutes=20)]
    d = schedule(snap([gang()], busy, nodes=nodes), CONFIG, T0)
    assert d.reservation is not None and sorted(d.reservation.node_ids) == ["a1", "a2"]

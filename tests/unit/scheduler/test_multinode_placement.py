"""A multinode job is a gang: N distinct nodes in one decision, or none and a reason; never two ranks on one node."""

from domain.scheduler import Reason, SchedulerConfig, schedule
from tests.unit.scheduler.builders import T0, job, node, running, snap

CONFIG = SchedulerConfig()


def placed(d):
    return {p.allocation_id: p.node_ids for p in d.placements}


def test_two_ranks_never_share_a_node_even_when_one_node_could_hold_both():
    d = schedule(snap([job("wide", cpu=2, nodes=2)], nodes=[node("big", cpu=64)]), CONFIG, T0)
    assert placed(d) == {} and d.reasons["wide"].reason is Reason.INSUFFICIENT_RESOURCES


def test_a_busy_node_makes_the_whole_gang_wait_rather_than_start_part_of_it():
    nodes = [node("n1"), node("n2"), node("n3")]
    d = schedule(snap([job("wide", cpu=8, nodes=3)], [running("r", ("n2",), cpu=4)], nodes=nodes), CONFIG, T0)
    assert placed(d) == {} and d.backfills == []
    free = schedule(snap([job("wide", cpu=4, nodes=3)], [running("r", ("n2",), cpu=4)], nodes=nodes), CONFIG, T0)
    assert sorted(placed(free)["wide"]) == ["n1", "n2", "n3"]

"""Messages people read give sizes in human units (`2 GiB`, not 2147483648) and name the node shape a refusal
compares with, so "cpu 4 > 2 per node" says whose 2 it is."""

from uuid import uuid4

import pytest

from domain.app import Invalid, ReadModelFunctions
from domain.quantities import human_bytes
from domain.scheduler import Definition, NodeShape, Reason, SchedulerConfig, schedule
from domain.scheduler.feasibility import check_feasible
from tests.unit.scheduler.builders import T0, GiB, job, node, snap


def test_byte_counts_read_in_binary_units_with_at_most_two_decimals():
    assert [human_bytes(n) for n in (2 * GiB, 3 * GiB // 2, 512 * 2**20, 100, 0, 2**31 + 1)] == [
        "2 GiB", "1.5 GiB", "512 MiB", "100 B", "0 B", "2 GiB"]


def test_a_job_no_idle_node_holds_is_told_its_memory_and_the_largest_node_in_gib():
    d = schedule(snap([job("big", memory=64 * GiB)], nodes=[node("n1", memory=32 * GiB)]), SchedulerConfig(), T0)
    why = d.reasons["big"]
    assert why.reason is Reason.INSUFFICIENT_RESOURCES
    assert "memory 64 GiB" in why.message and "2147483648" not in why.message
    assert "the largest, node n1, has cpu 8, memory 32 GiB" in why.message


def test_a_refusal_names_the_gpu_node_whose_cores_fall_short_beside_a_bigger_cpu_node():
    pool = Definition(id="local", max_nodes=2, shape=NodeShape(cpu=8, memory=16 * GiB, node="local-cpu"),
                      shapes=(NodeShape(cpu=2, memory=4 * GiB, devices={"nvidia.com/gpu": 1}, node="local-gpu"),
                              NodeShape(cpu=8, memory=16 * GiB, node="local-cpu")))
    refused = check_feasible(job("train", cpu=4, devices={"nvidia.com/gpu": 1}), [pool])
    assert refused.rejections["local"] == (
        "cpu 4 > 2 per node (the GPU node local-gpu has cpu 2, memory 4 GiB, nvidia.com/gpu x1)")


def test_submission_names_the_node_of_the_registered_shape_it_compared_with():
    from projections.snapshot import node_definitions
    from projections.views import Views
    from tests.unit.api.harness import SyncTailer
    from tests.unit.app.builders import app, user

    views = Views()
    roving = app(ReadModelFunctions(definitions=lambda: node_definitions(views.nodes)))
    tailer = SyncTailer(roving, views)
    roving.register_node("local-cpu", 4, 8 * GiB, {}, {}, "local", "127.0.0.1", 9100, T0)
    roving.register_node("local-gpu", 2, 4 * GiB, {"nvidia.com/gpu": 1}, {}, "local", "127.0.0.1", 9101, T0)
    tailer.wait_for(roving.last_position)
    text = """
version: v4
jobs:
  train:
    image: {uri: docker://alpine}
    script: echo train
    resource: {cpu: {cores: 4}, memory: {size: 2GiB}, devices: {nvidia.com/gpu: 1}}
"""
    with pytest.raises(Invalid) as refused:
        roving.submit_workflow(uuid4(), "train", text, 0, None, user(), T0)
    message = refused.value.problems[0].message
    assert "asks cpu 4, memory 2 GiB" in message and "the largest node (local-cpu, in local) has cpu 4" in message
    assert "local: cpu 4 > 2 per node (the GPU node local-gpu has cpu 2, memory 4 GiB, nvidia.com/gpu x1)" in message

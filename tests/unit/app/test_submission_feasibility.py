"""Submission refuses work no node of any definition could hold even when idle, and says why."""

from __future__ import annotations

from uuid import uuid4

import pytest

from domain.app import Invalid, ReadModelFunctions
from domain.app.ids import allocation_id
from domain.scheduler.snapshot import Definition, NodeShape
from tests.unit.app.builders import T0, app, user

GiB = 1 << 30
BIG_JOB = """
version: v4
jobs:
  train:
    image: {uri: docker://alpine}
    script: echo train
    resource: {cpu: {cores: 64}, memory: {size: 8GiB}}
"""
SMALL_JOB = BIG_JOB.replace("cores: 64", "cores: 2")

POOLS = [Definition(id="cpu-small", max_nodes=4, shape=NodeShape(cpu=8, memory=32 * GiB)),
         Definition(id="cpu-large", max_nodes=2, shape=NodeShape(cpu=32, memory=256 * GiB))]


def test_a_job_larger_than_every_definition_is_refused_naming_request_largest_node_and_each_rejection():
    with pytest.raises(Invalid) as refused:
        app().submit_workflow(uuid4(), "train", BIG_JOB, 0, None, user(), T0, definitions=POOLS)
    problem, = refused.value.problems
    assert problem.path == "jobs.train.resource"
    assert "asks cpu 64, memory 8 GiB on 1 node" in problem.message
    assert "the largest node (cpu-large) has cpu 32, memory 256 GiB" in problem.message
    assert "cpu-small: cpu 64 > 8 per node" in problem.message
    assert "cpu-large: cpu 64 > 32 per node" in problem.message


def test_a_refused_submission_writes_nothing():
    roving, wid = app(), uuid4()
    with pytest.raises(Invalid):
        roving.submit_workflow(wid, "train", BIG_JOB, 0, None, user(), T0, definitions=POOLS)
    assert wid not in roving.repository


def test_a_job_some_definition_could_hold_is_accepted():
    roving, wid = app(), uuid4()
    roving.submit_workflow(wid, "train", SMALL_JOB, 0, None, user(), T0, definitions=POOLS)
    assert allocation_id(wid, "train", 1) in roving.repository


def test_with_no_nodes_registered_at_all_the_work_is_accepted_and_waits_for_nodes():
    roving, wid = app(), uuid4()
    roving.submit_workflow(wid, "train", BIG_JOB, 0, None, user(), T0, definitions=[])
    assert allocation_id(wid, "train", 1) in roving.repository


def test_the_read_models_given_by_the_composition_root_are_asked_when_no_definitions_are_passed():
    roving = app(ReadModelFunctions(definitions=lambda: POOLS))
    with pytest.raises(Invalid) as refused:
        roving.submit_workflow(uuid4(), "train", BIG_JOB, 0, None, user(), T0)
    assert refused.value.problems[0].path == "jobs.train.resource"


def test_without_read_models_or_definitions_nothing_is_checked():
    roving, wid = app(), uuid4()
    roving.submit_workflow(wid, "train", BIG_JOB, 0, None, user(), T0)
    assert allocation_id(wid, "train", 1) in roving.repository


def test_a_missing_annotation_names_the_definition_that_lacks_it():
    gpu_job = SMALL_JOB.replace("resource: {", "resource: {annotations: {gpu: a100}, ")
    with pytest.raises(Invalid) as refused:
        app().submit_workflow(uuid4(), "train", gpu_job, 0, None, user(), T0, definitions=POOLS)
    assert "cpu-small: annotation gpu=a100 not offered" in refused.value.problems[0].message
    assert "annotations gpu=a100" in refused.value.problems[0].message


def test_the_definitions_the_registered_nodes_form_refuse_an_oversized_job():
    from projections.snapshot import node_definitions
    from projections.views import Views
    from tests.unit.api.harness import SyncTailer

    views = Views()
    roving = app(ReadModelFunctions(definitions=lambda: node_definitions(views.nodes)))
    tailer = SyncTailer(roving, views)
    roving.register_node("n1", 4, 8 * GiB, {}, {}, "pool-a", "127.0.0.1", 9100, T0)
    tailer.wait_for(roving.last_position)
    with pytest.raises(Invalid) as refused:
        roving.submit_workflow(uuid4(), "train", BIG_JOB, 0, None, user(), T0)
    assert "pool-a: cpu 64 > 4 per node" in refused.value.problems[0].message


def test_a_gpu_node_beside_bigger_cpu_only_nodes_of_its_definition_holds_a_gpu_job():
    from projections.snapshot import node_definitions
    from projections.views import Views
    from tests.unit.api.harness import SyncTailer

    views = Views()
    roving = app(ReadModelFunctions(definitions=lambda: node_definitions(views.nodes)))
    tailer = SyncTailer(roving, views)
    roving.register_node("big", 64, 256 * GiB, {}, {}, "pool", "127.0.0.1", 9100, T0)
    roving.register_node("gpu", 8, 32 * GiB, {"nvidia.com/gpu": 1}, {}, "pool", "127.0.0.1", 9101, T0)
    tailer.wait_for(roving.last_position)
    gpu_job = SMALL_JOB.replace("memory: {size: 8GiB}", "memory: {size: 8GiB}, devices: {nvidia.com/gpu: 1}")
    roving.submit_workflow(uuid4(), "train", gpu_job, 0, None, user(), T0)  # accepted: the gpu node holds it
    two_gpus = gpu_job.replace("nvidia.com/gpu: 1}", "nvidia.com/gpu: 2}")
    with pytest.raises(Invalid) as refused:
        roving.submit_workflow(uuid4(), "train", two_gpus, 0, None, user(), T0)
    assert "pool: devices nvidia.com/gpu 2 > 1 per node" in refused.value.problems[0].message


def test_validate_refuses_what_no_node_could_ever_hold_as_submission_does():
    from projections.snapshot import node_definitions
    from projections.views import Views
    from tests.unit.api.harness import SyncTailer

    views = Views()
    roving = app(ReadModelFunctions(definitions=lambda: node_definitions(views.nodes)))
    tailer = SyncTailer(roving, views)
    roving.register_node("n1", 4, 8 * GiB, {}, {}, "pool-a", "127.0.0.1", 9100, T0)
    tailer.wait_for(roving.last_position)
    found = roving.validate_workflow(BIG_JOB, user())
    assert [p.path for p in found["errors"]] == ["jobs.train.resource"]
    assert "no node can ever hold this job" in found["errors"][0].message
    with pytest.raises(Invalid) as refused:
        roving.submit_workflow(uuid4(), "train", BIG_JOB, 0, None, user(), T0)
    assert refused.value.problems == found["errors"]
    assert roving.validate_workflow(SMALL_JOB, user())["errors"] == []

"""Storage segments: a volume of a segment no node provides, or one stage mounting two segments, is refused at
submission naming the volume and the segment; a stage mounting a segment's volume is placed only on its nodes, and
its agent is told where the persistent volume lives."""

from __future__ import annotations

from uuid import uuid4

import pytest

from domain.app import Invalid, ReadModelFunctions, Roving
from domain.node import Capacity, Node
from domain.scheduler import SchedulerConfig, schedule
from domain.scheduler.segments import segment_problems
from projections.assignments import assignments
from tests.unit.projections.builders import T0 as FEED_T0
from tests.unit.projections.builders import Feed, at, request, submit, uid, wire
from tests.unit.volumes.test_persistent_volumes import ADMIN, T0, FastHasher, later, tenant

CLASSES = {"fast": {"segment": "fast-nvme"}, "cold": {"segment": "hdd"}}
TWO = """
version: v4
volumes:
  hot: {{reference: volume://user/fast/hot}}
  other: {{reference: {other}}}
jobs:
  write:
    image: {{uri: docker://alpine}}
    script: date > hot/stamp
    mounts: {{/hot: {{volume: hot}}, /other: {{volume: other}}}}
"""


def cluster(segments: set[str] | None) -> tuple[Roving, object]:
    roving = Roving(env={"PERSISTENCE_MODULE": "eventsourcing.popo", "ROVING_CLUSTER": "test",
                         "TRANSCODER_TOPIC": "adapters.transcoder:MsgspecTranscoder"}, passwords=FastHasher(),
                    read_models=ReadModelFunctions(segments=lambda: segments))
    roving.change_config({"storage.local.root": "/srv/v", "storage.classes": CLASSES}, ADMIN, T0)
    return roving, tenant(roving)[1]


def test_a_volume_of_a_segment_no_node_provides_is_refused_naming_volume_and_segment():
    roving, alice = cluster({"", "fast-nvme"})
    with pytest.raises(Invalid) as refused:
        roving.submit_workflow(uuid4(), "wf", TWO.format(other="volume://user/cold/old"), 0, None, alice, later(1))
    problems = {p.path: p.message for p in refused.value.problems}
    assert "volume other is in storage segment 'hdd', which no node provides" in problems["volumes.other.reference"]
    assert "volumes.hot.reference" not in problems


def test_one_job_mounting_volumes_of_two_segments_is_refused_naming_its_mounts():
    roving, alice = cluster({"fast-nvme", "hdd"})
    with pytest.raises(Invalid) as refused:
        roving.submit_workflow(uuid4(), "wf", TWO.format(other="volume://user/cold/old"), 0, None, alice, later(1))
    problem, = refused.value.problems
    assert problem.path == "jobs.write.mounts"
    assert "hot in 'fast-nvme', other in 'hdd'" in problem.message


def test_a_segment_volume_next_to_an_ephemeral_one_is_accepted_and_bound_to_its_segment():
    roving, alice = cluster({"fast-nvme"})
    workflow_id = uuid4()
    roving.submit_workflow(workflow_id, "wf", TWO.format(other="volume://user/ephemeral"), 0, None, alice, later(1))
    bindings = roving.repository.get(workflow_id).volume_bindings
    assert list(bindings) == ["hot"] and bindings["hot"]["segment"] == "fast-nvme"


def test_with_no_node_registered_yet_only_conflicts_are_checked():
    assert segment_problems([("jobs.a", ["x"])], {"x": "hdd"}, None) == []


def segment_node(name: str, segment: str) -> Node:
    registered = Node.register(uid(name), name, "pool", Capacity(cpu=8, memory=1 << 34, segment=segment),
                               by="agent", at=FEED_T0)
    registered.mark_ready(1, by="agent", at=FEED_T0)
    return registered


ONE = """
version: v4
volumes:
  hot: {reference: volume://user/fast/hot}
jobs:
  write:
    image: {uri: docker://alpine}
    script: date > hot/stamp
    mounts: {/hot: {volume: hot}}
"""
BINDING = {"reference": "volume://user/fast/hot", "path": "/srv/v/org/user/100000/hot", "uid": 100000,
           "gid": 100000, "mode": 0o700, "segment": "fast-nvme"}


def test_a_stage_mounting_a_segments_volume_is_placed_only_on_a_node_in_that_segment():
    feed = Feed()
    plain, fast = segment_node("plain", ""), segment_node("fast", "fast-nvme")
    workflow = submit(ONE)
    workflow.bind_volumes({"hot": BINDING}, by="alice", at=at(0))
    allocation = request(workflow, "write")
    feed.save(plain, fast, workflow, allocation)
    snapshot = feed.views.scheduler_snapshot(at(1))
    assert snapshot.queued[0].segments == ("fast-nvme",)
    decisions = schedule(snapshot, SchedulerConfig(), at(1))
    assert [p.node_ids for p in decisions.placements] == [(str(fast.id),)]


def test_the_agent_is_told_where_the_persistent_volume_lives_and_whose_it_is():
    feed = Feed()
    fast = segment_node("fast", "fast-nvme")
    workflow = submit(ONE)
    workflow.bind_volumes({"hot": BINDING}, by="alice", at=at(0))
    allocation = request(workflow, "write")
    allocation.place([str(fast.id)], by="scheduler", at=at(1))
    workflow.stage_started("write", 1, "fast", at(1))
    feed.save(fast, workflow, allocation)
    views = feed.views
    spec, = wire(assignments(fast.id, views.queue, views.workflows, views.nodes))
    assert spec["mounts"] == {"/hot": "hot"}
    assert spec["persistent"] == {"hot": {"path": "/srv/v/org/user/100000/hot", "uid": 100000, "gid": 100000,
                                          "mode": 0o700}}


def test_a_persistent_volume_pins_no_stage_to_the_node_that_first_used_it():
    workflow = submit(ONE.replace("script: date > hot/stamp", "script: date > hot/stamp\n    task-array: {start: 1, end: 2}"))
    workflow.bind_volumes({"hot": BINDING}, by="alice", at=at(0))
    workflow.stage_started("write[1]", 1, "fast-1", at(1))
    workflow.stage_started("write[2]", 1, "fast-2", at(1))  # an ephemeral volume would refuse this: it lives on fast-1
    assert workflow.volume_nodes == {}


def test_the_workflows_events_say_where_its_persistent_volumes_live():
    feed = Feed()
    workflow = submit(ONE)
    workflow.bind_volumes({"hot": BINDING}, by="alice", at=at(0))
    feed.save(workflow)
    messages = [row.message for row in feed.views.workflows.events(workflow.id)]
    assert "Persistent volumes: hot is volume://user/fast/hot at /srv/v/org/user/100000/hot" in messages

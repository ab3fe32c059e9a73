"""A placement writes only its allocation: the workflow learns of the start with the attempt's first word (a report,
a loss, a preemption), in that commit; a start that binds volumes to its node is still recorded as it is placed."""

from __future__ import annotations

from uuid import UUID, uuid4

from domain.allocation import QueueState
from domain.app.ids import allocation_id
from domain.fuzzfile.semantics import StageStatus
from tests.unit.app.builders import PIPELINE, T0, app, later, user

VOLUME_FIRST = """
version: v4
volumes:
  scratch:
    reference: volume://user/ephemeral
jobs:
  make:
    image: {uri: docker://alpine}
    script: echo made > /s/out
    mounts: {/s: {volume: scratch}}
  use:
    image: {uri: docker://alpine}
    script: cat /s/out
    mounts: {/s: {volume: scratch}}
    depends-on: [{name: make, status: FINISHED}]
"""


def events_of(roving, aggregate: UUID) -> list[str]:
    return [type(e).__qualname__ for e in roving.repository.event_store.get(aggregate)]


def placed(roving, text: str = PIPELINE, stage: str = "pre"):
    node, _ = roving.register_node("n1", 4, 8 << 30, {}, {}, "pool", "127.0.0.1", 9100, T0)
    wid = uuid4()
    roving.submit_workflow(wid, "w", text, 0, None, user(), T0)
    aid = allocation_id(wid, stage, 1)
    before = len(list(roving.repository.event_store.get(wid)))
    epoch = roving.place(aid, [node], "scheduler", later(1))
    return node, wid, aid, epoch, before


def test_a_placement_writes_one_event_on_the_allocation_and_none_on_the_workflow():
    roving = app()
    _, wid, aid, _, before = placed(roving)
    assert len(events_of(roving, wid)) == before
    assert events_of(roving, aid)[-1] == "Allocation.Placed"
    assert roving.repository.get(wid).stage("pre").status is StageStatus.READY


def test_the_exit_report_records_the_start_and_the_end_in_one_commit():
    roving = app()
    node, wid, aid, epoch, before = placed(roving)
    roving.report(node, aid, epoch, "exited", 0, "", later(5))
    workflow = roving.repository.get(wid)
    assert events_of(roving, wid)[before:before + 2] == ["Workflow.StageStarted", "Workflow.StageFinished"]
    started = list(roving.repository.event_store.get(wid))[before]
    assert (started.node, started.at) == ("n1", later(5))  # where it was placed; in time order with the exit
    assert workflow.stage("pre").status is StageStatus.FINISHED


def test_a_node_lost_before_any_report_retries_the_attempt_by_its_policy():
    roving = app()
    node, wid, aid, _, _ = placed(roving)
    roving.node_lost(node, later(2))
    assert roving.repository.get(aid).state is QueueState.EVICTED
    workflow = roving.repository.get(wid)
    assert (workflow.stage("pre").status, workflow.stage("pre").attempt) == (StageStatus.READY, 2)  # retry on: node
    assert "Workflow.StageStarted" in events_of(roving, wid)


def test_a_preemption_before_any_report_requeues_the_stage_as_its_next_attempt():
    roving = app()
    _, wid, aid, _, _ = placed(roving)
    roving.preempt(aid, "a higher priority job", "scheduler", later(2))
    workflow = roving.repository.get(wid)
    assert roving.repository.get(aid).state is QueueState.PREEMPTED
    assert (workflow.stage("pre").status, workflow.stage("pre").attempt) == (StageStatus.READY, 2)


def test_a_start_that_binds_an_ephemeral_volume_to_its_node_is_recorded_as_it_is_placed():
    roving = app()
    _, wid, _, _, before = placed(roving, VOLUME_FIRST, "make")
    assert events_of(roving, wid)[before:] == ["Workflow.StageStarted"]
    assert roving.repository.get(wid).volume_nodes == {"scratch": "n1"}


def test_a_note_told_before_any_other_report_is_one_event_on_the_workflow():
    roving = app()
    node, wid, aid, epoch, before = placed(roving)
    roving.report(node, aid, epoch, "note", None, "memlock limit not raised", later(2))
    assert events_of(roving, wid)[before:] == ["Workflow.StageNoted"]  # one message: no batch for a note
    roving.report(node, aid, epoch, "exited", 0, "", later(5))
    assert events_of(roving, wid)[before + 1:before + 3] == ["Workflow.StageStarted", "Workflow.StageFinished"]


def test_a_cold_read_of_a_workflow_told_a_note_before_its_exit_shows_the_start_at_the_placement():
    from projections.cold_workflows import ColdWorkflows

    roving = app()
    node, wid, aid, epoch, _ = placed(roving)
    roving.report(node, aid, epoch, "note", None, "memlock limit not raised", later(2))
    roving.report(node, aid, epoch, "exited", 0, "", later(5))
    cold = ColdWorkflows(lambda aggregate: list(roving.repository.event_store.get(aggregate)))(wid)
    stage = next(s for s in cold.get(wid).stages if s.name == "pre")
    assert (stage.status, stage.node, stage.started_at, stage.ended_at) == ("FINISHED", "n1", later(1), later(5))

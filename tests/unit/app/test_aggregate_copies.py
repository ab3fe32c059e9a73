"""A command's copy of an aggregate kept in memory: what the command changes is its own, what never changes is shared."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from uuid import uuid4

from domain.app.ids import allocation_id, node_id
from domain.holds import Effect
from domain.tenancy import Source
from tests.unit.app.builders import T0, app, user

JOB = "version: v4\njobs:\n  j:\n    image: {uri: docker://alpine}\n    command: ['true']\n    resource: {cpu: {cores: 1}}\n"


def test_a_copy_changed_by_a_command_leaves_the_kept_aggregate_as_it_was():
    roving, now = app(), datetime.now(UTC)
    roving.register_node("n1", 4, 1 << 30, {}, {}, "pool", "127.0.0.1", 9100, T0)
    wid = uuid4()
    roving.submit_workflow(wid, "w", JOB, 0, None, user(), now)
    kept_workflow, kept_node = roving.repository.get(wid), roving.repository.get(node_id("n1"))
    workflow, node = copy.deepcopy(kept_workflow), copy.deepcopy(kept_node)
    aid = allocation_id(wid, "j", 1)
    workflow.stage_started("j", 1, "n1", at=now, by="scheduler")
    node.place_hold("h1", Effect.CORDON, Source.ADMIN, "maintenance", by="admin", at=now)
    assert kept_workflow.stage("j").status.value == "READY" and workflow.stage("j").status.value == "STARTED"
    assert kept_node.holds == {} and node.holds
    assert workflow.definition is kept_workflow.definition  # parsed once at submission, never changed: shared
    assert str(aid) not in roving.allocations.on_node(node_id("n1"))



def test_a_copy_of_a_task_array_midway_is_its_own_and_ends_as_the_kept_one_would():
    roving, now = app(), datetime.now(UTC)
    wid = uuid4()
    array = JOB.replace("    command:", "    task-array: {start: 1, end: 6, concurrency: 2}\n    command:")
    roving.submit_workflow(wid, "w", array, 0, None, user(), now)
    kept = roving.repository.get(wid)
    first = kept.ready_stages()[0].stage.name
    kept.stage_started(first, 1, "n1", at=now, by="scheduler")
    kept.collect_events()
    counts = dict(kept.book.steps["j"].counts)
    workflow = copy.deepcopy(kept)
    for _ in range(6):
        for ready in workflow.ready_stages():
            workflow.stage_started(ready.stage.name, ready.attempt, "n1", at=now, by="scheduler")
        for name in [state.name for state in workflow.book.live.values()]:
            workflow.stage_exited(name, 1, 0, at=now, by="agent")
    assert workflow.status == "FINISHED" and workflow.stages_ended == 6
    assert kept.status == "STARTED" and kept.stages_ended == 0 and kept.stage(first).status.value == "STARTED"
    assert kept.book.steps["j"].counts == counts and len(kept.book.steps["j"].touched) == 2
    assert list(kept.book.live) == [first, kept.ready_stages()[0].stage.name]
    assert all(state.step is kept.book.steps["j"] for state in kept.book.live.values())

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
    assert str(aid) not in kept_node.allocations


"""Submitting, placing and reporting through the application: every change lands together."""

from __future__ import annotations

from uuid import uuid4

import pytest

from domain.allocation import Allocation, QueueState
from domain.app import Forbidden, Invalid, StaleEpoch
from domain.app.ids import allocation_id
from domain.tenancy import Role, Source
from domain.tenancy.permissions import Principal
from tests.unit.app.builders import ADMIN, PIPELINE, T0, app, later, user


def register(roving, name="node-1"):
    return roving.register_node(name, 4, 8 << 30, {}, {}, "pool-a", "127.0.0.1", 9100, T0)


def test_an_agent_token_cannot_submit_work_that_no_one_would_own():
    roving, wid = app(), uuid4()
    agent = Principal(user_id=None, username="agent", role=Role.USER, organization_id=None, source=Source.AGENT)
    with pytest.raises(Forbidden, match="submitted with a user's token, not with the agent token"):
        roving.submit_workflow(wid, "pipe", PIPELINE, 0, None, agent, T0)
    assert wid not in roving.repository


def test_submission_creates_a_ready_allocation_only_for_stages_whose_conditions_hold():
    roving, wid = app(), uuid4()
    roving.submit_workflow(wid, "pipe", PIPELINE, 0, None, user(), T0)
    pre = roving.repository.get(allocation_id(wid, "pre", 1))
    assert pre.state is QueueState.READY
    assert allocation_id(wid, "post", 1) not in roving.repository


def test_an_invalid_file_is_refused_with_every_problem_by_path():
    roving = app()
    with pytest.raises(Invalid) as refused:
        roving.submit_workflow(uuid4(), "bad", "version: v4\njobs:\n  a:\n    image: {uri: alpine}\n", 0, None, user(), T0)
    assert any(p.path.startswith("jobs.a.image") for p in refused.value.problems)


def test_a_positive_workflow_priority_is_refused_naming_the_field():
    with pytest.raises(Invalid) as refused:
        app().submit_workflow(uuid4(), "pipe", PIPELINE, 5, None, user(), T0)
    assert refused.value.problems[0].path == "priority"


def test_a_finished_job_releases_its_node_and_readies_its_dependent():
    roving, wid = app(), uuid4()
    node, epoch = register(roving)
    roving.submit_workflow(wid, "pipe", PIPELINE, 0, None, user(), T0)
    pre = allocation_id(wid, "pre", 1)
    fence = roving.place(pre, [node], "scheduler", later(1))
    roving.report(node, pre, fence, "exited", 0, "", later(5))
    assert roving.allocations.on_node(node) == []
    assert roving.repository.get(allocation_id(wid, "post", 1)).state is QueueState.READY
    assert roving.repository.get(wid).stage("pre").status.value == "FINISHED"


def test_exit_75_is_retried_as_a_new_attempt_with_a_new_allocation():
    roving, wid = app(), uuid4()
    node, _ = register(roving)
    roving.submit_workflow(wid, "pipe", PIPELINE, 0, None, user(), T0)
    first = allocation_id(wid, "pre", 1)
    roving.report(node, first, roving.place(first, [node], "scheduler", later(1)), "exited", 75, "", later(2))
    assert roving.repository.get(allocation_id(wid, "pre", 2)).state is QueueState.READY


def test_a_report_with_an_old_fence_is_refused():
    roving, wid = app(), uuid4()
    node, _ = register(roving)
    roving.submit_workflow(wid, "pipe", PIPELINE, 0, None, user(), T0)
    pre = allocation_id(wid, "pre", 1)
    fence = roving.place(pre, [node], "scheduler", later(1))
    with pytest.raises(StaleEpoch):
        roving.report(node, pre, fence + 1, "exited", 0, "", later(2))


def test_a_lost_node_requeues_work_that_retries_on_node_elsewhere():
    roving, wid = app(), uuid4()
    node, _ = register(roving)
    roving.submit_workflow(wid, "pipe", PIPELINE, 0, None, user(), T0)
    pre = allocation_id(wid, "pre", 1)
    roving.place(pre, [node], "scheduler", later(1))
    roving.node_lost(node, later(30))
    assert roving.repository.get(pre).state is QueueState.EVICTED
    assert roving.repository.get(allocation_id(wid, "pre", 2)).state is QueueState.READY
    assert roving.repository.get(node).status.value == "OFFLINE"


def test_stopping_a_workflow_cancels_its_live_allocations():
    roving, wid = app(), uuid4()
    node, _ = register(roving)
    roving.submit_workflow(wid, "pipe", PIPELINE, 0, None, user(), T0)
    pre = allocation_id(wid, "pre", 1)
    roving.place(pre, [node], "scheduler", later(1))
    roving.stop_workflow(wid, ADMIN, later(2))
    assert roving.repository.get(pre).state is QueueState.CANCELED
    assert roving.repository.get(wid).status == "CANCELED"
    assert isinstance(roving.repository.get(pre), Allocation)

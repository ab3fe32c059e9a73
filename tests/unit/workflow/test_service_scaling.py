"""An autoscaled pool on the Workflow aggregate: it starts at its size, grows and shrinks by ServiceScaled, and a
scaled-down replica stops cleanly (PENDING, never FAILED) to be the first started again."""

from __future__ import annotations

import pytest
from workflow_builders import at, statuses, submit

from domain.workflow import WorkflowError

POOL = """
version: v4
jobs:
  client: {image: {uri: docker://alpine:3.20}, script: 'true', depends-on: [{name: web, status: RUNNING}]}
services:
  web:
    image: {uri: docker://alpine:3.20}
    script: sleep 600
    network:
      ports: [{name: http, port: 8000}]
      endpoints: [{name: web, port-name: http, persistent: true}]
    autoscaler: {min-replicas: 1, max-replicas: 3, cooldown: 10s, metrics: [{name: in-flight-requests, target: 2}]}
"""


def running(workflow, *stages, minute=1):
    for stage in stages:
        attempt = workflow.stage(stage).attempt
        workflow.stage_started(stage, attempt, "n1", at(minute))
        workflow.stage_running(stage, attempt, at(minute))


def test_the_pool_starts_at_min_replicas_and_its_dependents_go_once_that_many_run():
    workflow = submit(POOL)
    assert statuses(workflow) == {"client": "WAITING", "web[1]": "READY", "web[2]": "PENDING", "web[3]": "PENDING"}
    running(workflow, "web[1]")
    assert statuses(workflow)["client"] == "READY"


def test_growing_readies_the_next_replicas_and_says_why_on_the_workflow():
    workflow = submit(POOL)
    running(workflow, "web[1]")
    assert workflow.scale_service("web", 3, "in-flight-requests 5 per replica", at(2)) == []
    assert [r.stage.name for r in workflow.newly_ready()] == ["client", "web[2]", "web[3]"]
    scaled = [e for e in workflow.pending_events if type(e).__name__ == "ServiceScaled"]
    assert [(e.service, e.from_size, e.to_size, e.reason) for e in scaled] == [
        ("web", 1, 3, "in-flight-requests 5 per replica")]
    assert workflow.pools()[0].size == 3 and workflow.pools()[0].scaled_at == at(2)


def test_shrinking_stops_the_highest_numbered_replicas_cleanly_and_they_start_first_next_time():
    workflow = submit(POOL)
    running(workflow, "web[1]")
    workflow.scale_service("web", 3, "busy", at(2))
    running(workflow, "web[2]", "web[3]", minute=3)
    assert workflow.scale_service("web", 1, "idle", at(4)) == ["web[3]", "web[2]"]
    web3 = workflow.stage("web[3]")
    assert (web3.status.value, web3.reason, web3.attempt) == ("PENDING", "Scaled down: idle", 2)
    assert workflow.status == "STARTED" and statuses(workflow)["web[1]"] == "RUNNING"
    with pytest.raises(WorkflowError, match="attempt 2"):  # the stopped copy's exit report is stale
        workflow.stage_exited("web[3]", 1, 143, at(5))
    workflow.scale_service("web", 2, "busy again", at(6))
    assert statuses(workflow)["web[2]"] == "READY" and workflow.stage("web[2]").reason == ""


def test_a_size_outside_the_bounds_or_an_unscaled_service_is_refused():
    workflow = submit(POOL)
    with pytest.raises(WorkflowError, match="between 1 and 3"):
        workflow.scale_service("web", 4, "", at(1))
    with pytest.raises(WorkflowError, match="no autoscaled service named client"):
        workflow.scale_service("client", 2, "", at(1))


def client_done_after_scaling_down():
    """The pool grew to 2 and shrank to 1 (web[2] scaled down, web[3] never started), then the client finished."""
    workflow = submit(POOL)
    running(workflow, "web[1]")
    workflow.scale_service("web", 2, "busy", at(2))
    running(workflow, "web[2]", minute=2)
    workflow.scale_service("web", 1, "idle", at(3))
    workflow.stage_started("client", 1, "n1", at(4))
    workflow.stage_exited("client", 1, 0, at(5))
    return workflow


def test_the_workflow_finishes_once_its_jobs_end_and_the_pool_is_stopped():
    workflow = client_done_after_scaling_down()
    for stage in workflow.services_to_stop():
        workflow.stage_stopped(stage, workflow.stage(stage).attempt, at(5), by="scheduler")
    assert workflow.status == "FINISHED"
    assert statuses(workflow) == {"client": "FINISHED", "web[1]": "FINISHED", "web[2]": "FINISHED", "web[3]": "FINISHED"}
    assert workflow.pools() == []


def test_a_closed_pool_ends_its_scaled_down_and_never_started_replicas_saying_why():
    workflow = client_done_after_scaling_down()
    workflow.stage_stopped("web[1]", 1, at(5), by="scheduler")
    ended = [(e.stage, e.reason) for e in workflow.collect_events() if type(e).__name__ == "StageFinished"][-2:]
    assert ended == [("web[2]", "Stopped: not needed (the pool ran 1)"), ("web[3]", "Stopped: not needed (the pool ran 1)")]
    assert workflow.status == "FINISHED"


def test_a_canceled_workflow_cancels_its_scaled_down_replicas_too():
    workflow = submit(POOL)
    running(workflow, "web[1]")
    workflow.scale_service("web", 2, "busy", at(2))
    running(workflow, "web[2]", minute=2)
    workflow.scale_service("web", 1, "idle", at(3))
    workflow.cancel(by="alice", at=at(4))
    assert set(statuses(workflow).values()) == {"CANCELED"}
    assert workflow.stages_ended == 4

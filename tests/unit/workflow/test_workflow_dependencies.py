"""Given a submitted workflow, when stages end, then dependents become ready, or are canceled with the reason."""

import pytest
from workflow_builders import at, fuzzfile, run, statuses, step, submit

from domain.workflow import WorkflowError

PRE_MAIN_POST = fuzzfile([step("pre"), step("main", "pre"), step("post", "pre:FAILED")])


def test_only_stages_without_dependencies_are_ready_at_submit():
    workflow = submit(PRE_MAIN_POST)
    assert [r.stage.name for r in workflow.ready_stages()] == ["pre"]
    assert workflow.stage("main").reason == "Waiting for pre FINISHED"
    assert workflow.status == "PENDING"


def test_a_dependent_becomes_ready_when_its_dependency_finishes():
    workflow = submit(PRE_MAIN_POST)
    run(workflow, "pre")
    assert statuses(workflow)["main"] == "READY"


def test_failed_dependent_is_canceled_when_its_dependency_finishes():
    workflow = submit(PRE_MAIN_POST)
    run(workflow, "pre")
    post = workflow.stage("post")
    assert post.status.value == "CANCELED"
    assert post.reason == "Canceled: pre finished; post-mortem needs FAILED"


def test_a_workflow_whose_post_mortem_was_skipped_by_design_finishes():
    workflow = submit(PRE_MAIN_POST)
    run(workflow, "pre")
    run(workflow, "main", minute=3)
    assert workflow.status == "FINISHED"


def test_failed_dependent_runs_only_when_its_dependency_failed():
    workflow = submit(PRE_MAIN_POST)
    run(workflow, "pre", exit_code=2)
    assert statuses(workflow) == {"pre": "FAILED", "main": "CANCELED", "post": "READY"}
    assert workflow.stage("main").reason == "Canceled: pre failed; needs FINISHED"
    run(workflow, "post", minute=5)
    assert workflow.status == "FAILED"


def test_a_dependent_of_a_canceled_stage_never_runs_and_the_cancel_cascades():
    text = fuzzfile([step("a"), step("b", "a:FAILED"), step("c", "b:FAILED"), step("d", "b")])
    workflow = submit(text)
    run(workflow, "a")
    assert statuses(workflow) == {"a": "FINISHED", "b": "CANCELED", "c": "CANCELED", "d": "CANCELED"}
    assert "b was canceled" in workflow.stage("c").reason


def test_a_dependent_of_a_preempted_and_abandoned_stage_never_runs():
    workflow = submit(fuzzfile([step("a"), step("b", "a:FAILED")]))
    workflow.stage_started("a", 1, "n1", at(1))
    workflow.stage_preempted("a", 1, at(2), requeue=False)
    assert statuses(workflow) == {"a": "CANCELED", "b": "CANCELED"}
    assert workflow.status == "FAILED"


def test_a_job_depending_on_a_running_service_starts_once_the_readiness_probe_passes():
    text = fuzzfile([step("client", "db:RUNNING")], [step("db")])
    workflow = submit(text)
    workflow.stage_started("db", 1, "n1", at(1))
    assert statuses(workflow)["client"] == "WAITING"
    workflow.stage_running("db", 1, at(2))
    assert statuses(workflow)["client"] == "READY"


def test_a_non_persistent_service_is_stopped_when_every_job_has_ended():
    workflow = submit(fuzzfile([step("client", "db:RUNNING")], [step("db")]))
    workflow.stage_started("db", 1, "n1", at(1))
    workflow.stage_running("db", 1, at(2))
    run(workflow, "client", minute=3)
    assert workflow.services_to_stop() == ["db"]
    workflow.stage_stopped("db", 1, at(6))
    assert workflow.status == "FINISHED"


def test_a_service_still_waiting_for_a_node_when_every_job_ended_ends_instead_of_running_alone():
    """Seen in the soak: a service queued behind a project's quota was placed after the only job had finished, and
    ran on with nothing to stop it; its workflow never ended."""
    workflow = submit(fuzzfile([step("job")], [step("web")]))
    assert statuses(workflow) == {"job": "READY", "web": "READY"}
    run(workflow, "job")
    assert workflow.services_to_stop() == [] and workflow.services_never_needed() == ["web"]
    workflow.stage_not_needed("web", at(4))
    assert statuses(workflow) == {"job": "FINISHED", "web": "FINISHED"}
    assert workflow.stage("web").reason == "Stopped: every job ended before it started"
    assert workflow.status == "FINISHED"


def test_a_service_waiting_on_a_running_job_is_not_yet_given_up():
    workflow = submit(fuzzfile([step("job")], [step("web")]))
    workflow.stage_started("job", 1, "n1", at(1))
    assert workflow.services_never_needed() == []


def test_task_arrays_respect_their_concurrency():
    text = fuzzfile([step("r", extra="task-array: {start: 1, end: 4, concurrency: 2}")])
    workflow = submit(text)
    assert [r.stage.name for r in workflow.ready_stages()] == ["r[1]", "r[2]"]
    assert [r.stage.env["FB_TASK_ID"] for r in workflow.ready_stages()] == ["1", "2"]
    run(workflow, "r[1]")
    assert [r.stage.name for r in workflow.ready_stages()] == ["r[2]", "r[3]"]


def test_a_dependent_of_a_task_array_waits_for_every_task():
    workflow = submit(fuzzfile([step("r", extra="task-array: {start: 1, end: 2}"), step("after", "r")]))
    run(workflow, "r[1]")
    assert statuses(workflow)["after"] == "WAITING"
    run(workflow, "r[2]", minute=4)
    assert statuses(workflow)["after"] == "READY"


def test_cancel_ends_the_workflow_and_its_unfinished_stages():
    workflow = submit(PRE_MAIN_POST)
    run(workflow, "pre")
    workflow.cancel(by="alice", at=at(9), reason="wrong input")
    assert workflow.status == "CANCELED"
    assert statuses(workflow) == {"pre": "FINISHED", "main": "CANCELED", "post": "CANCELED"}
    assert workflow.stage("main").reason == "Canceled by alice: wrong input"
    with pytest.raises(WorkflowError, match="already ended CANCELED"):
        workflow.cancel(by="alice", at=at(10))


def test_a_stale_report_for_an_old_attempt_is_refused():
    workflow = submit(fuzzfile([step("a")]))
    with pytest.raises(WorkflowError, match="is READY; it cannot exit"):
        workflow.stage_exited("a", 1, 0, at(1))
    workflow.stage_started("a", 1, "n1", at(1))
    with pytest.raises(WorkflowError, match="stale"):
        workflow.stage_exited("a", 2, 0, at(2))


def test_a_positive_workflow_priority_is_refused():
    with pytest.raises(WorkflowError, match="0 or lower"):
        submit(fuzzfile([step("a")]), priority=5)


def test_the_stage_flag_wins_over_the_start_flag_for_preemptible():
    text = fuzzfile([step("a", extra="preemptible: false"), step("b")])
    ready = {r.stage.name: r.preemptible for r in submit(text, preemptible=True).ready_stages()}
    assert ready == {"a": False, "b": True}

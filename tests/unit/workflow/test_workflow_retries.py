"""Given retry policies, when stages exit or lose their node, then they retry within one budget or fail saying why."""

from workflow_builders import at, fuzzfile, run, statuses, step, submit


def retrying(policy: str):
    return submit(fuzzfile([step("a", extra=f"policy: {policy}")]))


def event_names(workflow) -> list[str]:
    return [type(e).__name__ for e in workflow.collect_events()]


def test_a_listed_exit_code_starts_a_new_attempt_with_a_reason():
    workflow = retrying("{retry: {on: [75], attempts: 2}}")
    run(workflow, "a", exit_code=75)
    view = workflow.stage("a")
    assert (view.status.value, view.attempt) == ("READY", 2)
    assert view.reason == "Retried after exit 75 (attempt 2 of 3)"
    assert "StageRetried" in event_names(workflow)


def test_retries_stop_when_the_budget_is_spent_and_the_exhaustion_is_an_event():
    workflow = retrying("{retry: {on: [75], attempts: 1}}")
    run(workflow, "a", exit_code=75)
    run(workflow, "a", exit_code=75, minute=3)
    assert workflow.stage("a").status.value == "FAILED"
    assert workflow.stage("a").reason == "Failed: exit 75; retries exhausted (1 of 1 used)"
    assert event_names(workflow)[-2:] == ["RetriesExhausted", "StageFailed"]


def test_a_failure_that_could_have_been_retried_names_the_field_to_set():
    workflow = retrying("{retry: {on: [1], attempts: 2}}")
    run(workflow, "a", exit_code=75)
    assert workflow.stage("a").reason == "Failed: exit 75 (exit 75 is not in policy.retry.on)"


def test_without_a_retry_policy_the_failure_says_how_to_retry():
    workflow = submit(fuzzfile([step("a")]))
    run(workflow, "a", exit_code=3)
    assert "set policy.retry: {on: [3], attempts: N}" in workflow.stage("a").reason


def test_retry_without_on_retries_nothing():
    workflow = retrying("{retry: {attempts: 3}}")
    run(workflow, "a", exit_code=1)
    assert statuses(workflow) == {"a": "FAILED"}


def test_node_loss_and_exit_codes_share_one_budget():
    workflow = retrying("{retry: {on: [node, 75], attempts: 2}}")
    workflow.stage_started("a", 1, "n1", at(1))
    workflow.stage_lost_node("a", 1, at(2))
    run(workflow, "a", exit_code=75, minute=3)
    assert workflow.stage("a").attempt == 3
    run(workflow, "a", exit_code=75, minute=5)
    assert workflow.stage("a").status.value == "FAILED"
    assert workflow.stage("a").retries_used == 2


def test_node_retries_are_capped_by_max_eviction_restarts_when_it_is_lower():
    workflow = retrying("{retry: {on: [node], attempts: 5}}")
    for attempt in (1, 2):
        workflow.stage_started("a", attempt, "n1", at(attempt))
        workflow.stage_lost_node("a", attempt, at(attempt), max_eviction_restarts=1)
    assert workflow.stage("a").status.value == "FAILED"
    assert "maxEvictionRestarts (1) reached" in workflow.stage("a").reason


def test_restart_on_node_fault_retries_node_loss_up_to_the_cluster_cap():
    workflow = retrying("{restart: on-node-fault}")
    for attempt in (1, 2, 3, 4):
        workflow.stage_started("a", attempt, "n1", at(attempt))
        workflow.stage_lost_node("a", attempt, at(attempt))
    assert workflow.stage("a").status.value == "FAILED" and workflow.stage("a").retries_used == 3


def test_losing_the_node_without_node_in_retry_on_fails_saying_so():
    workflow = retrying("{retry: {on: [75], attempts: 2}}")
    workflow.stage_started("a", 1, "n1", at(1))
    workflow.stage_lost_node("a", 1, at(2))
    assert workflow.stage("a").reason == "Failed: lost its node (to retry, add node to policy.retry.on)"


def test_preemption_requeues_as_a_new_attempt_without_spending_the_budget():
    workflow = retrying("{retry: {on: [75], attempts: 1}}")
    workflow.stage_started("a", 1, "n1", at(1))
    workflow.stage_preempted("a", 1, at(2))
    view = workflow.stage("a")
    assert (view.status.value, view.attempt, view.retries_used) == ("READY", 2, 0)


def test_exit_143_is_never_retried_even_when_everything_else_is():
    workflow = retrying("{retry: {on: [node, 1, 2], attempts: 3}}")
    run(workflow, "a", exit_code=143)
    assert "SIGTERM" in workflow.stage("a").reason and workflow.status == "FAILED"

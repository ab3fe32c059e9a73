"""Given real workflow and allocation events, the workflows view shows what the domain decided, in words."""

from tests.unit.projections.builders import ONE_JOB, Feed, at, node, request, submit

PRE_MAIN_POST = (
    "version: v4\njobs:\n"
    "  pre: {image: {uri: docker://alpine:3.20}, script: 'true'}\n"
    "  main: {image: {uri: docker://alpine:3.20}, script: 'true', depends-on: [{name: pre, status: FINISHED}]}\n"
    "  post: {image: {uri: docker://alpine:3.20}, script: 'true', depends-on: [{name: pre, status: FAILED}]}\n"
)
RETRYING = ("version: v4\njobs:\n  a: {image: {uri: docker://alpine:3.20}, script: 'exit 75',"
            " policy: {retry: {on: [75], attempts: 2}}}\n")


def messages(feed: Feed, workflow) -> list[str]:
    return [row.message for row in feed.views.workflows.events(workflow.id)]


def run_stage(feed: Feed, workflow, stage: str, exit_code: int, on, minute: float = 1):
    """Request, place (the start) and end one stage attempt the way the application does: the workflow records the
    start with the exit report."""
    attempt = workflow.stages[stage].attempt
    allocation = request(workflow, stage, attempt, minute, organization_priority=5, group_priority=2, user_priority=1)
    allocation.place([str(on.id)], by="scheduler", at=at(minute + 1))
    feed.save(allocation)
    allocation.exited(exit_code, allocation.epoch, by="agent", at=at(minute + 2))
    workflow.stage_started(stage, attempt, on.name, at(minute + 2))
    workflow.stage_exited(stage, attempt, exit_code, at(minute + 2))
    feed.save(allocation, workflow)
    return allocation


def test_a_finished_stage_readies_its_dependent_and_cancels_the_post_mortem():
    feed, n1 = Feed(), node("node-1")
    feed.save(n1)
    workflow = submit(PRE_MAIN_POST)
    feed.save(workflow)
    run_stage(feed, workflow, "pre", 0, n1)
    stages = {s.name: (s.status, s.reason) for s in feed.views.workflows.get(workflow.id).stages}
    assert stages == {"pre": ("FINISHED", "Finished"), "main": ("READY", ""),
                      "post": ("CANCELED", "Canceled: pre finished; post-mortem needs FAILED")}
    assert "Canceled: pre finished; post-mortem needs FAILED" in messages(feed, workflow)


def test_the_activity_stream_tells_the_story_of_a_run_in_sentences():
    feed, n1 = Feed(), node("node-1")
    feed.save(n1)
    workflow = submit(ONE_JOB)
    feed.save(workflow)
    run_stage(feed, workflow, "main", 0, n1)
    assert messages(feed, workflow) == [
        "Submitted by alice", "Ready to run", "Priority set (workflow: 0, organization: 5, group: 2, user: 1)",
        "Queued for scheduling", "Placed on node-1", "Started on node-1", "Finished (exit 0)",
    ]
    assert [r.stage for r in feed.views.workflows.events(workflow.id)][-1] == "main"


def test_a_retried_exit_says_which_attempt_comes_next_and_the_stage_shows_its_allocation():
    feed, n1 = Feed(), node("node-1")
    feed.save(n1)
    workflow = submit(RETRYING)
    feed.save(workflow)
    run_stage(feed, workflow, "a", 75, n1)
    second = request(workflow, "a", 2, minute=5)
    feed.save(second)
    assert "Retried after exit 75 (attempt 2 of 3)" in messages(feed, workflow)
    stage = feed.views.workflows.get(workflow.id).stages[0]
    assert (stage.status, stage.attempts, stage.exit_code, stage.allocation_id) == ("READY", 2, 75, second.id)
    assert stage.priority == {"workflow": 0, "organization": 0, "group": 0, "user": 0}


def test_a_failed_exit_without_a_retry_policy_reads_failed_with_its_code():
    feed, n1 = Feed(), node("node-1")
    feed.save(n1)
    workflow = submit(ONE_JOB)
    feed.save(workflow)
    run_stage(feed, workflow, "main", 3, n1)
    assert messages(feed, workflow)[-1].startswith("Failed: exit 3")
    detail = feed.views.workflows.get(workflow.id)
    assert (detail.status, detail.stages[0].node) == ("FAILED", "node-1")


def test_a_preempted_allocation_names_the_work_that_preempted_it():
    feed, n1 = Feed(), node("node-1")
    feed.save(n1)
    workflow = submit(ONE_JOB)
    allocation = request(workflow, "main")
    allocation.place([str(n1.id)], by="scheduler", at=at(1))
    workflow.stage_started("main", 1, "node-1", at(1))
    feed.save(workflow, allocation)
    allocation.preempt("Preempted by workflow wf-u job urgent", by="scheduler", at=at(2))
    workflow.stage_preempted("main", 1, at(2))
    feed.save(allocation, workflow)
    assert messages(feed, workflow)[-2:] == ["Preempted by workflow wf-u job urgent", "Preempted; requeued as attempt 2"]


def test_a_canceled_workflow_says_who_canceled_it():
    feed = Feed()
    workflow = submit(ONE_JOB)
    workflow.cancel(by="bob", at=at(3), reason="wrong input")
    feed.save(workflow)
    assert messages(feed, workflow)[-1] == "Canceled by bob: wrong input"
    assert feed.views.workflows.get(workflow.id).status == "CANCELED"


def test_the_list_filters_by_visibility_and_status_and_orders_by_priority():
    feed = Feed()
    low = submit(ONE_JOB, name="low", priority=-5, minute=0)
    high = submit(ONE_JOB, name="high", minute=1)
    theirs = submit(ONE_JOB, name="theirs", owner={"organization": "o2", "group": "g2", "user": "bob"}, minute=2)
    feed.save(low, high, theirs)
    feed.save(request(low, "main"), request(high, "main"))
    mine = lambda row: row.owner.user_id != "bob"  # noqa: E731 - a predicate like the API's
    assert [r.name for r in feed.views.workflows.list(mine, order_by="priority")] == ["high", "low"]
    assert [r.name for r in feed.views.workflows.list(status="pending")] == ["low", "high", "theirs"]
    assert feed.views.workflows.list(status="FINISHED") == []


def test_redelivered_events_change_nothing():
    feed, n1 = Feed(), node("node-1")
    feed.save(n1)
    workflow = submit(ONE_JOB)
    feed.save(workflow)
    run_stage(feed, workflow, "main", 0, n1)
    before = (feed.views.workflows.get(workflow.id), messages(feed, workflow), feed.views.queue.stats())
    feed.views.apply(feed.log[2:])
    feed.views.apply(feed.log)
    assert (feed.views.workflows.get(workflow.id), messages(feed, workflow), feed.views.queue.stats()) == before
    assert feed.views.position == len(feed.log)


def test_an_unknown_workflow_has_no_detail_and_no_activity():
    views = Feed().views
    assert views.workflows.get("00000000-0000-0000-0000-000000000000") is None
    assert views.workflows.events("not-a-uuid") == []


def test_a_stage_shows_when_its_attempt_started_and_ended_and_a_stage_that_never_ran_shows_neither():
    feed, n1 = Feed(), node("node-1")
    feed.save(n1)
    workflow = submit(PRE_MAIN_POST)
    feed.save(workflow)
    run_stage(feed, workflow, "pre", 0, n1, minute=3)
    stages = {s.name: s for s in feed.views.workflows.get(workflow.id).stages}
    assert (stages["pre"].started_at, stages["pre"].ended_at) == (at(4), at(5))
    assert (stages["main"].started_at, stages["main"].ended_at) == (None, None)
    assert (stages["post"].started_at, stages["post"].ended_at) == (None, None)


def test_a_retried_stage_shows_the_times_of_its_latest_attempt():
    feed, n1 = Feed(), node("node-1")
    feed.save(n1)
    workflow = submit(RETRYING)
    feed.save(workflow)
    run_stage(feed, workflow, "a", 75, n1, minute=1)
    [retried] = feed.views.workflows.get(workflow.id).stages
    assert (retried.started_at, retried.ended_at) == (None, None)
    run_stage(feed, workflow, "a", 0, n1, minute=10)
    [done] = feed.views.workflows.get(workflow.id).stages
    assert (done.started_at, done.ended_at, done.attempts) == (at(11), at(12), 2)

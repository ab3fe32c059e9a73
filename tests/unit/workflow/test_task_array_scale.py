"""Task arrays cost what their running tasks cost: submission is linear or better, memory follows the tasks run.

The documented cap (`domain.fuzzfile.limits.MAX_TASKS`) is enforced by validation; the aggregate is held to
arrays ten times larger than it, built past validation, so raising the cap stays a one-line decision.
"""

import pickle
import time
import tracemalloc
from collections import Counter
from uuid import UUID

import msgspec
import pytest
from workflow_builders import OWNER, T0, at, fuzzfile, step
from workflow_builders import submit as submit_text

from domain.app import Roving
from domain.app.errors import Invalid
from domain.fuzzfile import parse_fuzzfile
from domain.fuzzfile.limits import MAX_TASKS
from domain.tenancy import Role
from domain.tenancy.permissions import Principal
from domain.workflow import Workflow, WorkflowError

ENDINGS = ("StageFinished", "StageFailed", "StageSkipped")


def array(tasks: int, concurrency: int = 8, extra: str = "", after: bool = False) -> str:
    jobs = [step("r", extra=f"task-array: {{start: 1, end: {tasks}, concurrency: {concurrency}}}" + extra)]
    return fuzzfile(jobs + ([step("after", "r")] if after else []))


def submit(text: str, tasks: int | None = None) -> Workflow:
    """Submit `text`; with `tasks`, its array `r` is widened to that many tasks past validation's cap."""
    if tasks is None:
        return submit_text(text)
    definition = parse_fuzzfile(text).definition
    job = definition.jobs["r"]
    wide = msgspec.structs.replace(job, task_array=msgspec.structs.replace(job.task_array, end=tasks))
    definition = msgspec.structs.replace(definition, jobs={**definition.jobs, "r": wide})
    return Workflow.submit(UUID(int=1), "wf", definition, OWNER, by="alice", at=T0)


def active(workflow: Workflow, job: str = "r") -> int:
    """Counted from the views, not from the aggregate's own counters."""
    return sum(1 for v in workflow.stage_views() if v.name.startswith(f"{job}[") and v.status.active)


def submit_and_run(tasks: int, exits: int) -> float:
    """Seconds to submit an array and run `exits` of its tasks through start and exit."""
    began = time.process_time()
    workflow = submit(array(10), tasks=tasks)
    for minute in range(exits):
        ready = workflow.ready_stages()[0]
        workflow.stage_started(ready.stage.name, ready.attempt, "n1", at(minute))
        workflow.stage_exited(ready.stage.name, ready.attempt, 0, at(minute))
    return time.process_time() - began


def test_submitting_a_100000_task_array_takes_well_under_seconds_and_little_memory():
    text = array(10)
    tracemalloc.start()
    try:
        began = time.process_time()
        workflow = submit(text, tasks=100_000)
        took = time.process_time() - began
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert took < 5
    assert peak < 20_000_000
    assert [r.stage.name for r in workflow.ready_stages()] == [f"r[{i}]" for i in range(1, 9)]
    assert (len(workflow.stages), workflow.status) == (100_000, "PENDING")


def test_submit_and_exits_cost_grows_linearly_not_quadratically_with_the_array():
    small = min(submit_and_run(10_000, exits=100) for _ in range(3))
    large = min(submit_and_run(100_000, exits=100) for _ in range(3))
    assert large / small < 20, f"10k: {small:.4f}s, 100k: {large:.4f}s (quadratic would be ~100x)"


def test_a_200_task_array_runs_to_the_end_with_every_task_ending_once_and_never_above_its_concurrency():
    policy = ", policy: {retry: {on: [3], attempts: 1}}"
    workflow = submit(array(200, concurrency=8, extra=policy, after=True))
    started: Counter = Counter()
    for minute in range(1000):
        ready = workflow.ready_stages()
        if not ready:
            break
        assert active(workflow) <= 8
        for r in ready:
            workflow.stage_started(r.stage.name, r.attempt, "n1", at(minute))
            started[r.stage.name] += 1
            assert active(workflow) <= 8
        for r in reversed(ready):  # out of order: slots free in any order
            first_try_of_every_seventh = r.attempt == 1 and r.stage.task_id is not None and r.stage.task_id % 7 == 0
            workflow.stage_exited(r.stage.name, r.attempt, 3 if first_try_of_every_seventh else 0, at(minute))
            assert active(workflow) <= 8
    endings = Counter(e.stage for e in workflow.collect_events() if type(e).__name__ in ENDINGS)
    tasks = {f"r[{i}]" for i in range(1, 201)}
    assert set(endings) == tasks | {"after"} and set(endings.values()) == {1}
    assert started["r[7]"] == 2 and started["r[8]"] == 1
    assert workflow.status == "FINISHED" and workflow.stages_ended == 201


def replay(workflow: Workflow) -> Workflow:
    replayed = None
    for event in workflow.pending_events:
        replayed = event.mutate(replayed)
    return replayed


def test_a_replayed_array_has_the_same_views_as_the_one_that_ran_at_every_step():
    workflow = submit(array(50, concurrency=4, after=True))
    for minute in range(100):
        ready = workflow.ready_stages()
        if not ready:
            break
        for r in ready:
            workflow.stage_started(r.stage.name, r.attempt, "n1", at(minute))
            workflow.stage_exited(r.stage.name, r.attempt, 1 if r.stage.task_id == 13 else 0, at(minute))
        replayed = replay(workflow)
        assert replayed.stage_views() == workflow.stage_views()
        assert (replayed.status, replayed.ready_stages()) == (workflow.status, workflow.ready_stages())
    assert workflow.status == "FAILED" and workflow.stages_ended == 51
    assert workflow.stage("after").reason == "Canceled: r failed; needs FINISHED"


def test_a_failed_dependency_skips_every_untouched_task_once():
    workflow = submit(fuzzfile([step("pre"), step("r", "pre", "task-array: {start: 0, end: 999, concurrency: 8}")]))
    assert workflow.stage("r[0]").reason == "Waiting for pre FINISHED"
    workflow.stage_started("pre", 1, "n1", at(1))
    workflow.stage_exited("pre", 1, 1, at(2))
    replayed = replay(workflow)
    events = workflow.collect_events()
    assert [e.steps for e in events if type(e).__name__ == "StepsSkipped"] == [
        [["r", "Canceled: pre failed; needs FINISHED", False]]]  # one event for the 1,000 tasks
    assert not [e for e in events if type(e).__name__ == "StageSkipped"]
    assert Counter(v.status.value for v in workflow.stage_views() if v.name.startswith("r[")) == {"CANCELED": 1000}
    assert workflow.status == "FAILED" and replayed.stage_views() == workflow.stage_views()


def test_canceling_an_array_ends_the_tasks_that_never_ran_without_touching_each():
    workflow = submit(array(10), tasks=100_000)
    workflow.stage_started("r[1]", 1, "n1", at(1))
    workflow.cancel(by="alice", at=at(2), reason="wrong input")
    assert (workflow.status, workflow.stages_ended) == ("CANCELED", 100_000)
    assert workflow.stage("r[1]").status.value == workflow.stage("r[99999]").status.value == "CANCELED"
    assert workflow.stage("r[99999]").reason == "Canceled by alice: wrong input"
    assert workflow.ready_stages() == []


def test_stages_read_as_a_mapping_of_every_task_in_order():
    workflow = submit(array(5, concurrency=2))
    assert list(workflow.stages) == ["r[1]", "r[2]", "r[3]", "r[4]", "r[5]"]
    assert "r[5]" in workflow.stages and "r[6]" not in workflow.stages and "r[05]" not in workflow.stages
    assert workflow.stages["r[4]"].spec.env["FB_TASK_ID"] == "4"
    assert [(n, s.status.value) for n, s in workflow.stages.items()][:3] == [
        ("r[1]", "READY"), ("r[2]", "READY"), ("r[3]", "PENDING")]
    with pytest.raises(WorkflowError, match="no stage named r\\[6\\]"):
        workflow.stage("r[6]")


def test_an_array_is_one_step_spec_and_its_live_views_are_the_tasks_holding_slots():
    workflow = submit(fuzzfile([step("pre"), step("r", "pre", "task-array: {start: 1, end: 5000, concurrency: 3}")]))
    assert [(s.name, s.kind, s.concurrency) for s in workflow.step_specs()] == [("pre", "job", None), ("r", "task", 3)]
    workflow.stage_started("pre", 1, "n1", at(1))
    workflow.stage_exited("pre", 1, 0, at(2))
    workflow.stage_started("r[2]", 1, "n1", at(3))
    assert [(v.name, v.status.value) for v in workflow.live_stage_views()] == [
        ("r[1]", "READY"), ("r[2]", "STARTED"), ("r[3]", "READY")]


def test_only_the_stages_an_exit_readied_are_newly_ready():
    workflow = submit(array(20, concurrency=3))
    workflow.collect_events()
    workflow.stage_started("r[2]", 1, "n1", at(1))
    workflow.stage_exited("r[2]", 1, 0, at(2))
    assert [r.stage.name for r in workflow.newly_ready()] == ["r[4]"]
    assert [r.stage.name for r in workflow.ready_stages()] == ["r[1]", "r[3]", "r[4]"]


def test_a_workflow_pickles_with_its_counters_for_view_snapshots():
    workflow = submit(array(30, concurrency=3))
    workflow.stage_started("r[1]", 1, "n1", at(1))
    workflow.stage_exited("r[1]", 1, 0, at(2))
    copy = pickle.loads(pickle.dumps(workflow))
    assert copy.stage_views() == workflow.stage_views() and copy.ready_stages() == workflow.ready_stages()


def test_submitting_an_array_over_the_cap_is_invalid_and_one_at_the_cap_is_accepted_fast():
    roving = Roving(env={"PERSISTENCE_MODULE": "eventsourcing.popo", "ROVING_CLUSTER": "test"})
    alice = Principal(user_id=UUID(int=7), username="alice", role=Role.USER, organization_id=UUID(int=8))
    with pytest.raises(Invalid) as refused:
        roving.submit_workflow(UUID(int=1), "big", array(MAX_TASKS + 1), 0, None, alice, T0)
    assert [p.path for p in refused.value.problems] == ["jobs.r.task-array"]
    assert f"{MAX_TASKS:,}" in refused.value.problems[0].message
    began = time.process_time()
    roving.submit_workflow(UUID(int=2), "at-cap", array(MAX_TASKS), 0, None, alice, T0)
    assert time.process_time() - began < 5
    assert len(roving.repository.get(UUID(int=2)).ready_stages()) == 8

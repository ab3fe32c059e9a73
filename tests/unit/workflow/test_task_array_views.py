"""The views of a large task array cost per event what the event changed, not what the array holds."""

import time

import msgspec

from domain.fuzzfile import parse_fuzzfile
from domain.workflow import Workflow
from tests.unit.projections.builders import Feed, at, uid

ARRAY = ("version: v4\njobs:\n"
         "  r: {image: {uri: docker://alpine:3.20}, script: 'true', task-array: {start: 1, end: 10, concurrency: 8}}\n")


def submit(tasks: int) -> Workflow:
    """An array of `tasks` (past validation's cap when larger: the views must not care)."""
    definition = parse_fuzzfile(ARRAY).definition
    job = definition.jobs["r"]
    wide = msgspec.structs.replace(job, task_array=msgspec.structs.replace(job.task_array, end=tasks))
    definition = msgspec.structs.replace(definition, jobs={"r": wide})
    owner = {"organization": str(uid("org")), "group": str(uid("group")), "user": str(uid("alice"))}
    return Workflow.submit(uid("wf"), "wf", definition, owner, by="alice", at=at(0))


def feed_exits(tasks: int, exits: int) -> tuple[Feed, Workflow, float]:
    """Seconds to feed `exits` task runs to the views, reading the list row and status after each save."""
    feed, workflow = Feed(), submit(tasks)
    began = time.perf_counter()
    feed.save(workflow)
    for minute in range(exits):
        ready = workflow.ready_stages()[0]
        workflow.stage_started(ready.stage.name, ready.attempt, "n1", at(minute))
        workflow.stage_exited(ready.stage.name, ready.attempt, 0, at(minute))
        feed.save(workflow)
        assert feed.views.workflows.list()[0].stages_ended == minute + 1
        assert feed.views.workflows.status(workflow.id) == "STARTED"
    return feed, workflow, time.perf_counter() - began


def test_following_a_large_array_in_the_views_costs_the_same_per_exit_at_any_array_size():
    small = min(feed_exits(1_000, exits=100)[2] for _ in range(3))
    large = min(feed_exits(100_000, exits=100)[2] for _ in range(3))
    assert large / small < 5, f"1k: {small:.4f}s, 100k: {large:.4f}s"


def test_the_list_row_counts_every_task_and_the_ended_ones():
    feed, workflow, _ = feed_exits(500, exits=20)
    row = feed.views.workflows.list()[0]
    assert (row.stage_count, row.stages_ended, row.status) == (500, 20, "STARTED")
    detail = feed.views.workflows.get(workflow.id)
    assert len(detail.stages) == 500 and detail.stages[499].status == "PENDING"


def test_a_follower_reads_only_the_activity_it_has_not_sent():
    feed, workflow, _ = feed_exits(50, exits=3)
    everything = feed.views.workflows.events(workflow.id)
    assert feed.views.workflows.events(workflow.id, since=len(everything) - 2) == everything[-2:]
    assert feed.views.workflows.events(workflow.id, since=len(everything)) == []
    assert feed.views.workflows.status(uid("nothing")) is None

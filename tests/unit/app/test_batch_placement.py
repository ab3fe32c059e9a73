"""A scheduler pass's placements commit together: what fits is placed, what does not is refused and changes nothing."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID, uuid4

from domain.app.ids import allocation_id, node_id
from tests.unit.app.builders import ADMIN, T0, app, user

GiB = 1 << 30
JOB = "version: v4\njobs:\n  main:\n    image: {uri: docker://alpine}\n    script: echo hi\n" \
      "    resource: {cpu: {cores: 2}}\n"


def queued(roving) -> UUID:
    wid = uuid4()
    roving.submit_workflow(wid, "w", JOB, 0, None, user(), datetime.now(UTC))
    return allocation_id(wid, "main", 1)


def events_of(roving, aggregate: UUID) -> list[str]:
    return [type(e).__qualname__ for e in roving.repository.event_store.get(aggregate)]


def test_a_pass_placing_two_jobs_on_one_node_writes_no_node_event():
    roving = app()
    roving.register_node("n1", 4, 4 * GiB, {}, {}, "pool", "127.0.0.1", 9100, T0)
    node = node_id("n1")
    before = events_of(roving, node)
    first, second = queued(roving), queued(roving)
    outcome = roving.place_all([(first, [node]), (second, [node])], "scheduler", datetime.now(UTC))
    assert (outcome[first], outcome[second]) == (1, 1)
    assert events_of(roving, node) == before  # the node's capacity is the scheduler's view: no write race on it
    assert set(roving.allocations.on_node(node)) == {str(first), str(second)}


def test_a_placement_on_a_cordoned_node_is_refused_and_changes_nothing():
    roving = app()
    roving.register_node("n1", 4, 4 * GiB, {}, {}, "pool", "127.0.0.1", 9100, T0)
    node = node_id("n1")
    roving.cordon(node, "bios update", ADMIN, T0)
    job = queued(roving)
    outcome = roving.place_all([(job, [node])], "scheduler", datetime.now(UTC))
    assert "node n1 takes no new work: cordon hold" in str(outcome[job])
    assert "Allocation.Placed" not in events_of(roving, job)


def test_a_placement_of_an_allocation_that_ended_meanwhile_is_refused_and_the_rest_are_placed():
    roving = app()
    roving.register_node("n1", 4, 4 * GiB, {}, {}, "pool", "127.0.0.1", 9100, T0)
    node = node_id("n1")
    stale, fresh = queued(roving), queued(roving)
    stopped = roving.repository.get(stale).workflow_id
    roving.stop_workflow(stopped, ADMIN, datetime.now(UTC))
    outcome = roving.place_all([(stale, [node]), (fresh, [node])], "scheduler", datetime.now(UTC))
    assert isinstance(outcome[stale], str) and "cannot become RUNNING" in outcome[stale]
    assert outcome[fresh] == 1
    assert set(roving.allocations.on_node(node)) == {str(fresh)}


ARRAY = "version: v4\njobs:\n  t:\n    image: {uri: docker://alpine}\n    command: ['true']\n" \
        "    resource: {cpu: {cores: 1}}\n    task-array: {start: 1, end: 4, concurrency: 2}\n"


def test_two_task_ends_reported_together_start_the_next_two_tasks_once_each():
    roving = app()
    roving.register_node("n1", 4, 4 * GiB, {}, {}, "pool", "127.0.0.1", 9100, T0)
    node, wid, now = node_id("n1"), uuid4(), datetime.now(UTC)
    roving.submit_workflow(wid, "w", ARRAY, 0, None, user(), now)
    running = [allocation_id(wid, name, 1) for name in sorted(roving.repository.get(wid).stages)[:2]]
    epochs = roving.place_all([(a, [node]) for a in running], "scheduler", now)

    class Exit:
        def __init__(self, allocation):
            self.allocation_id, self.epoch, self.event, self.exit_code, self.reason = allocation, epochs[allocation], \
                "exited", 0, ""
            self.listening = None

    assert roving.report_all(node, [Exit(a) for a in running], now) == [None, None]
    following = [allocation_id(wid, name, 1) for name in sorted(roving.repository.get(wid).stages)[2:]]
    for allocation in following:  # each made once: the second end saw the allocation the first had made
        assert events_of(roving, allocation).count("Allocation.Requested") == 1

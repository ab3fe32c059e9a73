"""A cold workflow is rebuilt from its own and its allocations' events, read by subject; the last few rebuilt are
kept (so a poller reads the log once), within a bound on their stages as well as their number."""

from __future__ import annotations

from collections import Counter, defaultdict

from domain.allocation import Allocation
from domain.ids import allocation_id
from projections import cold_workflows
from projections.cold_workflows import ColdWorkflows
from tests.unit.projections.builders import ONE_JOB, at, submit


def finished(number: int) -> list:
    """One workflow submitted, its allocation (the id the application gives it) requested, then both canceled."""
    workflow = submit(ONE_JOB, name=f"wf-{number}", minute=number)
    spec = workflow.stages["main"].spec
    allocation = Allocation.request(
        allocation_id(workflow.id, "main", 1), workflow.id, "main", 1,
        {"cpu_cores": spec.resources.cpu_cores, "memory_bytes": spec.resources.memory_bytes},
        workflow_priority=0, preemptible=False, by="scheduler", at=at(number))
    allocation.cancel("done", by="alice", at=at(number + 0.5))
    workflow.cancel(by="alice", at=at(number + 0.5))
    return [*workflow.collect_events(), *allocation.collect_events()]


def log_of(*numbers: int):
    by_subject, reads = defaultdict(list), Counter()
    for n in numbers:
        for event in finished(n):
            by_subject[event.originator_id].append(event)

    def events_of(aggregate_id):
        reads[aggregate_id] += 1
        return list(by_subject.get(aggregate_id, []))
    workflows = [e.originator_id for n in numbers for e in finished(n)[:1]]
    return events_of, reads, workflows


def test_a_cold_workflow_is_rebuilt_with_its_allocations_activity_and_read_once_while_kept():
    events_of, reads, (workflow,) = log_of(1)
    cold = ColdWorkflows(events_of)
    detail = cold(workflow).get(workflow)
    assert detail.status == "CANCELED" and detail.stages[0].allocation_id is not None
    assert {row.type for row in cold(workflow).events(workflow)} >= {"Workflow.Submitted", "Allocation.Requested"}
    assert reads[workflow] == 1


def test_kept_workflows_are_bounded_by_their_stages(monkeypatch):
    monkeypatch.setattr(cold_workflows, "KEPT_STAGES", 1)
    events_of, reads, (first, second) = log_of(1, 2)
    cold = ColdWorkflows(events_of)
    cold(first), cold(second), cold(first)
    assert reads[first] == 2 and reads[second] == 1


def test_an_id_the_log_has_no_workflow_of_is_none():
    events_of, _, _ = log_of()
    assert ColdWorkflows(events_of)(finished(9)[0].originator_id) is None

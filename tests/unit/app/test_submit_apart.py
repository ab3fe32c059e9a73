"""A plain submission saves its workflow, then each allocation apart (issue 43: no atomic batch). A submitter that
fails between the two leaves a READY stage with no allocation: the same submission again, the command's own retry
after a lost race, or else the scheduler leader's sweep requests it, and the job runs once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import pytest
from eventsourcing.persistence import OperationalError

from api.scheduler.runner import SchedulerRunner
from domain.allocation import Allocation, QueueState
from domain.app import ReadModelFunctions, Roving
from domain.app.errors import WriteRace
from domain.app.ids import allocation_id
from domain.app.workflows import APART_MOST
from projections.views import Views
from tests.unit.api.harness import SyncTailer
from tests.unit.app.builders import PIPELINE, app, user

GiB = 1 << 30
ALICE = user()


def control_plane() -> tuple[Roving, Views, SchedulerRunner]:
    roving, views = app(ReadModelFunctions(running_on=lambda node: [])), Views()
    roving.register_node("n1", 4, 4 * GiB, {}, {}, "pool", "127.0.0.1", 9100, datetime.now(UTC))
    return roving, views, SchedulerRunner(roving, views, SyncTailer(roving, views), None)


def failing_allocation_saves(roving: Roving, monkeypatch: pytest.MonkeyPatch, error: Exception, times: int = 1):
    """The application's saves, with the first `times` saves of an allocation failing before anything is written."""
    real, failed = roving.save, []

    def save(*objs: Any, **kwargs: Any) -> Any:
        if len(failed) < times and any(isinstance(o, Allocation) for o in objs):
            failed.append(objs)
            raise error
        return real(*objs, **kwargs)

    monkeypatch.setattr(roving, "save", save)
    return failed


def commits(roving: Roving, monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """What each save of the application held, by aggregate class."""
    real, seen = roving.save, []

    def save(*objs: Any, **kwargs: Any) -> Any:
        seen.append([type(o).__name__ for o in objs if o is not None])
        return real(*objs, **kwargs)

    monkeypatch.setattr(roving, "save", save)
    return seen


def events_of(roving: Roving, aggregate: UUID) -> list[str]:
    return [s.topic.rpartition(".")[2] for s in roving.recorder.select_events(aggregate)]


def runs_once(roving: Roving, runner: SchedulerRunner, wid: UUID) -> None:
    """The pass places the job's one attempt on n1, and nothing asks for another."""
    runner.tick()
    pre = roving.repository.get(allocation_id(wid, "pre", 1))
    assert pre.state is QueueState.RUNNING and len(pre.nodes) == 1
    assert events_of(roving, pre.id) == ["Requested", "Placed"]
    assert allocation_id(wid, "pre", 2) not in roving.repository


def test_a_plain_submission_is_one_save_of_its_workflow_then_one_of_its_allocation(monkeypatch: pytest.MonkeyPatch):
    roving, _, runner = control_plane()
    seen, wid = commits(roving, monkeypatch), uuid4()
    roving.submit_workflow(wid, "w", PIPELINE, 0, None, ALICE, datetime.now(UTC))
    assert seen == [["Workflow"], ["Allocation"]]
    assert events_of(roving, wid) == ["Submitted"]  # its READY stage is in it
    assert roving.repository.get(wid).stage("pre").status.value == "READY"
    runs_once(roving, runner, wid)


def test_a_submission_of_more_ready_stages_than_it_saves_apart_is_one_atomic_save(monkeypatch: pytest.MonkeyPatch):
    roving, _, _ = control_plane()
    seen, wid = commits(roving, monkeypatch), uuid4()
    jobs = "".join(f"  j{n}:\n    image: {{uri: docker://alpine}}\n    script: 'true'\n" for n in range(APART_MOST + 1))
    roving.submit_workflow(wid, "w", f"version: v4\njobs:\n{jobs}", 0, None, ALICE, datetime.now(UTC))
    assert seen == [["Workflow", *["Allocation"] * (APART_MOST + 1)]]


def test_an_allocation_save_that_lost_a_race_is_requested_again_by_the_commands_retry(
        monkeypatch: pytest.MonkeyPatch):
    roving, _, runner = control_plane()
    failed, wid = failing_allocation_saves(roving, monkeypatch, WriteRace("someone changed this")), uuid4()
    roving.submit_workflow(wid, "w", PIPELINE, 0, None, ALICE, datetime.now(UTC))
    assert len(failed) == 1 and events_of(roving, wid) == ["Submitted"]
    runs_once(roving, runner, wid)


def test_the_same_submission_again_requests_the_allocation_its_first_never_saved(monkeypatch: pytest.MonkeyPatch):
    roving, _, runner = control_plane()
    failing_allocation_saves(roving, monkeypatch, OperationalError("commit not acknowledged"))
    wid, at = uuid4(), datetime.now(UTC)
    with pytest.raises(OperationalError):
        roving.submit_workflow(wid, "w", PIPELINE, 0, None, ALICE, at)
    assert allocation_id(wid, "pre", 1) not in roving.repository
    roving.submit_workflow(wid, "w", PIPELINE, 0, None, ALICE, at)  # the client's retry, same Idempotency-Key
    assert events_of(roving, wid) == ["Submitted"]
    runs_once(roving, runner, wid)


def test_the_leaders_sweep_requests_the_allocation_of_a_submitter_gone_between_its_saves(
        monkeypatch: pytest.MonkeyPatch):
    roving, views, runner = control_plane()
    failing_allocation_saves(roving, monkeypatch, OperationalError("the process died here"))
    wid, fresh = uuid4(), uuid4()
    with pytest.raises(OperationalError):
        roving.submit_workflow(wid, "w", PIPELINE, 0, None, ALICE, datetime.now(UTC) - timedelta(minutes=1))
    roving.submit_workflow(fresh, "w", PIPELINE, 0, None, ALICE, datetime.now(UTC))  # saved whole, just now
    runner.tick()  # the first pass sweeps: the allocation is requested
    assert roving.repository.get(allocation_id(wid, "pre", 1)).state is QueueState.READY
    runs_once(roving, runner, wid)
    assert events_of(roving, allocation_id(fresh, "pre", 1))[0] == "Requested"  # its own, not the sweep's
    runner.tailer.wait_for(roving.last_position)
    assert [(s.name, s.status) for s in views.workflows.get(wid).stages] == [("pre", "STARTED"), ("post", "WAITING")]


def test_the_sweep_leaves_a_workflow_still_saving_its_allocations_to_its_submitter(monkeypatch: pytest.MonkeyPatch):
    roving, _, runner = control_plane()
    failing_allocation_saves(roving, monkeypatch, OperationalError("still on its way"))
    wid = uuid4()
    with pytest.raises(OperationalError):
        roving.submit_workflow(wid, "w", PIPELINE, 0, None, ALICE, datetime.now(UTC))  # changed less than 5 s ago
    runner.tick()
    assert allocation_id(wid, "pre", 1) not in roving.repository


def test_an_allocation_landing_after_a_stop_that_missed_it_is_withdrawn_by_the_sweep(monkeypatch: pytest.MonkeyPatch):
    roving, views, runner = control_plane()
    late = failing_allocation_saves(roving, monkeypatch, OperationalError("slow"))
    wid = uuid4()
    with pytest.raises(OperationalError):
        roving.submit_workflow(wid, "w", PIPELINE, 0, None, ALICE, datetime.now(UTC))
    roving.stop_workflow(wid, ALICE, datetime.now(UTC))  # between the submitter's two saves: it sees no allocation
    roving.save(*late[0])  # the submitter's allocation lands after all
    runner.tick()
    pre = roving.repository.get(allocation_id(wid, "pre", 1))
    assert pre.state is QueueState.CANCELED and not pre.nodes
    runner.tailer.wait_for(roving.last_position)
    assert views.queue.in_states(QueueState.READY) == []

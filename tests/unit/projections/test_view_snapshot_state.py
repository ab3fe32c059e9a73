"""A view snapshot holds what the log built, never caches or the runner's figures, and restores to the same
answers; periodic saves keep to their time budget."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from adapters.view_snapshots import ViewSnapshots
from projections.views import Views
from tests.unit.projections.builders import ONE_JOB, at, node, request, submit


class Log:
    """The one thing a snapshot asks of its recorder: which log it is, and where it ends."""

    def __init__(self, last: int) -> None:
        self.last = last

    def log_identity(self) -> tuple[str, int]:
        return "ROVING_test@2026-12-03", self.last


def filled() -> Views:
    views, events = Views(), []
    n1, workflow = node("node-1"), submit(ONE_JOB, name="wf")
    allocation = request(workflow, "main")
    allocation.place([str(n1.id)], by="scheduler", at=at(1))
    for aggregate in (n1, workflow, allocation):
        events.extend(aggregate.collect_events())
    views.apply(enumerate(events, start=1))
    return views


def test_the_queue_saves_its_rows_but_not_its_caches_or_the_runners_figures():
    views = filled()
    views.queue.rows(now=at(5))
    views.queue.rows(now=at(5), ranked={"x": 1.0})
    saved = views.saved_state()["QueueView"]
    assert "mirror" in saved and not {"_orders", "_evaluator_for", "pushed", "lock"} & set(saved)
    restored = Views()
    restored.restore_state(pickle.loads(pickle.dumps(views.saved_state())))
    assert restored.position == views.position
    assert [(r.id, r.state, r.node) for r in restored.queue.rows(now=at(5))] == [
        (r.id, r.state, r.node) for r in views.queue.rows(now=at(5))]


def test_a_state_missing_a_view_is_refused_whole():
    views = Views()
    with pytest.raises(ValueError, match="no state for"):
        views.restore_state({"QueueView": filled().saved_state()["QueueView"]})
    assert views.position == 0 and views.queue.rows() == []


def test_a_periodic_save_waits_until_twenty_times_its_own_duration_has_passed(tmp_path: Path, monkeypatch):
    views = filled()
    snapshots = ViewSnapshots(tmp_path / "views.snapshot", b"k" * 32, Log(views.position), every=1)
    clock = iter([100.0, 101.0, 100.5, 100.5, 121.0])  # the save takes 1 s; asked at 100.5 and at 121
    monkeypatch.setattr("adapters.view_snapshots.time.perf_counter", lambda: next(clock))
    monkeypatch.setattr("adapters.view_snapshots.time.monotonic", lambda: next(clock))
    snapshots.save(views)
    snapshots.saved_position = 0  # as if many events had come since
    assert snapshots.due(views) is False
    assert snapshots.due(views) is True

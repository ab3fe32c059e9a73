"""A periodic view snapshot is written by a forked child: the tail goes on while it pickles, the file holds
the views as they were at the fork, and a child that fails leaves the previous snapshot and no litter."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import structlog

from adapters.view_snapshots import ViewSnapshots
from projections.views import Views
from tests.unit.projections.builders import node
from tests.unit.projections.test_view_snapshot_state import Log, filled

KEY = b"k" * 32
pytestmark = pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")


def add_node(views: Views, name: str) -> None:
    views.apply([(views.position + 1 + i, e) for i, e in enumerate(node(name).collect_events())])


def test_the_child_writes_the_views_as_they_were_while_the_tail_goes_on(tmp_path: Path, monkeypatch):
    go = tmp_path / "go"
    write = ViewSnapshots._write

    def held_back(self, *args):  # runs in the child: it waits (10 s at most) for the test's signal, then writes
        deadline = time.monotonic() + 10
        while not go.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        return write(self, *args)

    monkeypatch.setattr(ViewSnapshots, "_write", held_back)
    views, path = filled(), tmp_path / "views.snapshot"
    snapshots = ViewSnapshots(path, KEY, Log(views.position), every=1)
    snapshots.save_in_child(views)
    forked_at = views.position
    add_node(views, "node-after")  # the tail goes on while the child has not even started writing
    assert not path.exists() and snapshots.writer is not None
    assert snapshots.due(views) is False  # one child at a time
    go.touch()
    snapshots.reap(wait=30)
    assert snapshots.writer is None and path.exists() and not list(tmp_path.glob("*.tmp"))
    restored = Views()
    assert ViewSnapshots(path, KEY, Log(views.position)).restore(restored) == forked_at
    assert [n.name for n in restored.nodes.list()] == ["node-1"]


def test_a_child_that_cannot_write_leaves_no_file_and_a_warning(tmp_path: Path):
    views = filled()
    path = tmp_path / "missing-dir" / "views.snapshot"
    snapshots = ViewSnapshots(path, KEY, Log(views.position), every=1)
    with structlog.testing.capture_logs() as logs:
        snapshots.save_in_child(views)
        snapshots.reap(wait=30)
    assert snapshots.writer is None and not path.exists()
    failed = [entry for entry in logs if entry["event"] == "view_snapshot.not_saved"]
    assert failed and failed[0]["reason"] == "the writer exited with status 1"
    add_node(views, "node-2")
    assert snapshots.saved_position < views.position  # it is tried again later, within the time budget


def test_a_child_that_hangs_is_killed_and_the_next_save_can_start(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(ViewSnapshots, "_write", lambda self, *args: time.sleep(10))
    views, path = filled(), tmp_path / "views.snapshot"
    snapshots = ViewSnapshots(path, KEY, Log(views.position), every=1)
    snapshots.CHILD_SECONDS = 0.2
    snapshots.save_in_child(views)
    with structlog.testing.capture_logs() as logs:
        snapshots.reap(wait=1)
    assert snapshots.writer is None and not path.exists()
    assert [e["reason"] for e in logs if e["event"] == "view_snapshot.not_saved"] == ["killed: it took too long"]

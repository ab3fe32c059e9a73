"""Given a real JetStream log, views restored from a snapshot plus the log's tail equal views rebuilt from the
whole log; a snapshot that is not provably this log's, this code's and signed by this key is ignored."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from uuid import uuid4

import pytest
from eventsourcing.application import Application

from adapters import view_snapshots
from adapters.tailer import Tailer
from adapters.view_snapshots import ViewSnapshots
from projections.views import Views
from tests.unit.projections.builders import ONE_JOB, at, node, request, submit

_clusters = itertools.count()
KEY = b"k" * 32


def application(nats_url: str) -> Application:
    return Application(env={
        "PERSISTENCE_MODULE": "adapters.jetstream", "ROVING_NATS_URL": nats_url,
        "ROVING_CLUSTER": f"snap{next(_clusters)}-{uuid4().hex[:8]}",
    })


@pytest.fixture
def app(nats_url: str) -> Iterator[Application]:
    app = application(nats_url)
    yield app
    app.close()


def tailed(app: Application, snapshots: ViewSnapshots | None = None) -> tuple[Views, int]:
    """Views caught up with the whole log, and how many events the tailer itself applied to get there."""
    views, applied = Views(), []
    apply = views.apply
    views.apply = lambda batch: applied.append(len(batch := list(batch))) or apply(batch)  # type: ignore[method-assign]
    with Tailer(app, views, snapshots=snapshots) as tailer:
        assert tailer.caught_up.wait(10) and tailer.wait_for(app.recorder.max_notification_id(), timeout=10)
    return views, sum(applied)


def picture(views: Views) -> dict:
    """What people read from the views: workflows with stages and events, the queue, nodes."""
    return {
        "workflows": sorted((r.name, r.status) for r in views.workflows.list()),
        "stages": {str(r.id): [(s.name, s.status, s.node) for s in views.workflows.get(r.id).stages]
                   for r in views.workflows.list()},
        "events": {str(r.id): [e.message for e in views.workflows.events(r.id)] for r in views.workflows.list()},
        "queue": [(str(r.id), r.state, r.node) for r in views.queue.rows(now=at(10))],
        "nodes": sorted((n.name, n.status) for n in views.nodes.list()),
    }


def history(app: Application, count: int) -> None:
    """Nodes, workflows, and some of them placed and started."""
    tag = uuid4().hex[:4]
    n1 = node(f"node-{tag}")
    workflows = [submit(ONE_JOB, name=f"wf-{tag}-{i}") for i in range(count)]
    app.save(n1, *workflows)
    for workflow in workflows[::2]:
        allocation = request(workflow, "main")
        allocation.place([str(n1.id)], by="scheduler", at=at(1))
        workflow.stage_started("main", 1, n1.name, at(1))
        app.save(allocation, workflow)


def test_a_restart_restores_the_snapshot_and_replays_only_the_tail(app: Application, tmp_path: Path):
    history(app, 6)
    snapshots = ViewSnapshots(tmp_path / "views.snapshot", KEY, app.recorder)
    first, _ = tailed(app)
    picture(first)  # the queue's caches (a compiled priority expression among them) are filled, not saved
    snapshots.save(first)
    saved_at = first.position
    history(app, 3)  # written after the snapshot: the restart must still see it
    restored, replayed = tailed(app, ViewSnapshots(tmp_path / "views.snapshot", KEY, app.recorder))
    rebuilt, everything = tailed(app)
    assert picture(restored) == picture(rebuilt)
    assert replayed == app.recorder.max_notification_id() - saved_at < everything
    assert len(picture(restored)["workflows"]) == 9


def test_the_tailer_saves_every_so_many_events(app: Application, tmp_path: Path):
    history(app, 4)
    path = tmp_path / "views.snapshot"
    snapshots = ViewSnapshots(path, KEY, app.recorder, every=5)
    views, _ = tailed(app, snapshots)
    snapshots.reap(wait=30)  # the periodic save is written by a forked child
    assert snapshots.writer is None and not list(tmp_path.glob("*.tmp"))
    header = json.loads(path.read_bytes().partition(b"\n")[0])
    assert 5 <= header["position"] <= views.position
    assert oct(path.stat().st_mode & 0o777) == "0o600"


@pytest.mark.parametrize("spoil", ["other_key", "flipped_byte", "other_code", "other_log", "garbage"])
def test_a_snapshot_that_is_not_provably_this_logs_is_ignored_and_the_views_rebuilt(
        app: Application, nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spoil: str):
    history(app, 3)
    path = tmp_path / "views.snapshot"
    source = app
    if spoil == "other_log":
        source = application(nats_url)
        history(source, 5)
    saved, _ = tailed(source)
    ViewSnapshots(path, b"x" * 32 if spoil == "other_key" else KEY, source.recorder).save(saved)
    if spoil == "flipped_byte":
        raw = bytearray(path.read_bytes())
        raw[-10] ^= 0xFF
        path.write_bytes(bytes(raw))
    if spoil == "garbage":
        path.write_bytes(b"not a snapshot")
    if spoil == "other_code":
        monkeypatch.setattr(view_snapshots, "code_fingerprint", lambda: "changed")
    snapshots = ViewSnapshots(path, KEY, app.recorder)
    assert snapshots.restore(Views()) == 0
    restored, replayed = tailed(app, snapshots)
    rebuilt, everything = tailed(app)
    assert picture(restored) == picture(rebuilt) and replayed == everything
    if source is not app:
        source.close()

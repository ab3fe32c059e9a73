"""With a fixed hot set a view snapshot, and so a restart, holds the live work and the newest finished workflows:
its size stays flat as finished history grows, and the restored views go on trimming the same way."""

from __future__ import annotations

from pathlib import Path

from adapters.view_snapshots import ViewSnapshots
from projections.views import Views
from tests.unit.projections.builders import ONE_JOB, at, request, submit
from tests.unit.projections.test_view_snapshot_state import Log

HOT = 3
ROOT = Path(__file__).resolve().parents[3]


def finished(number: int) -> list:
    """One workflow submitted, requested and canceled: its events."""
    workflow = submit(ONE_JOB, name=f"wf-{number}", minute=number)
    allocation = request(workflow, "main", minute=number)
    allocation.cancel("done", by="alice", at=at(number + 0.5))
    workflow.cancel(by="alice", at=at(number + 0.5))
    return [*workflow.collect_events(), *allocation.collect_events()]


def grown(views: Views, first: int, count: int) -> None:
    events = [e for n in range(first, first + count) for e in finished(n)]
    views.apply(enumerate(events, start=views.position + 1))


def saved_bytes(views: Views, path) -> int:
    snapshots = ViewSnapshots(path, b"k" * 32, Log(views.position))
    snapshots.save(views)
    return path.stat().st_size


def test_a_snapshot_stays_the_same_size_as_finished_history_grows(tmp_path):
    views = Views(hot_workflows=HOT)
    grown(views, 0, 20)
    small = saved_bytes(views, tmp_path / "a.snapshot")
    grown(views, 20, 200)
    large = saved_bytes(views, tmp_path / "b.snapshot")
    assert len(views.workflows.mirror.items) == HOT and len(views.queue.mirror.items) == HOT
    assert large < small * 1.1, (small, large)


def test_restored_views_hold_the_hot_set_and_keep_trimming(tmp_path):
    views = Views(hot_workflows=HOT)
    grown(views, 0, 10)
    path = tmp_path / "views.snapshot"
    ViewSnapshots(path, b"k" * 32, Log(views.position)).save(views)
    restored = Views(hot_workflows=HOT)
    ViewSnapshots(path, b"k" * 32, Log(views.position)).restore(restored)
    assert [w.name for w in restored.workflows.mirror.values()] == ["wf-7", "wf-8", "wf-9"]
    grown(restored, 10, 2)
    assert [w.name for w in restored.workflows.mirror.values()] == ["wf-9", "wf-10", "wf-11"]


def test_the_views_memory_stays_flat_as_finished_workflows_grow_beyond_the_hot_set():
    import gc
    import tracemalloc
    views, sizes = Views(hot_workflows=50), []
    # what the project's own code holds, not the process's: another test's thread left running in this worker
    # (a stack's tailer, a client's pool) allocates meanwhile, and once made the last step look 11% larger
    ours = [tracemalloc.Filter(True, f"{ROOT}/{layer}/*") for layer in ("projections", "domain", "adapters")]
    tracemalloc.start()
    try:
        for step in range(3):
            grown(views, step * 300, 300)
            gc.collect()
            held = tracemalloc.take_snapshot().filter_traces(ours).statistics("filename")
            sizes.append(sum(stat.size for stat in held))
    finally:
        tracemalloc.stop()
    assert sizes[2] < sizes[1] * 1.02, sizes  # 600 and 900 finished (after a warm-up of 300): the same 50 held

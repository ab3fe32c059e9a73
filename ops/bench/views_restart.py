"""Views restart benchmark: rebuilding every read model from the whole log against restoring the snapshot and
replaying only the tail, on one embedded nats-server in one run. Prints one JSON line.

The log holds WORKFLOWS five-job submissions (as `POST /v4/workflows` writes them); the snapshot is taken
there, then TAIL more submissions follow, as after a snapshot taken some time before a restart. It also
times a periodic save as the tailer makes it (a forked child writes it): the tail's pause against a save
made in the caller's thread (as on stop), whose whole duration the tail would wait.
Usage: python ops/bench/views_restart.py [WORKFLOWS] [TAIL]
"""

from __future__ import annotations

import gc
import json
import logging
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from uuid import uuid4

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import structlog  # noqa: E402

from adapters.nats_server import NatsServer  # noqa: E402
from adapters.tailer import Tailer  # noqa: E402
from adapters.view_snapshots import ViewSnapshots  # noqa: E402
from domain.app import Roving  # noqa: E402
from domain.tenancy import Role  # noqa: E402
from domain.tenancy.permissions import Principal  # noqa: E402
from projections.views import Views  # noqa: E402

ADMIN = Principal(user_id=uuid4(), username="bench", role=Role.CLUSTER_ADMIN, organization_id=None,
                  is_cluster_admin=True)
DEFINITION = {"version": "v4", "jobs": {
    f"j{i}": {"image": {"uri": "docker://alpine"}, "script": "true", "resource": {"cpu": {"cores": 1}}}
    for i in range(5)}}


def submit(roving: Roving, count: int) -> None:
    def one(_: int) -> None:
        roving.submit_workflow(uuid4(), "bench", DEFINITION, 0, None, ADMIN, datetime.now(UTC))
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, range(count)))


def caught_up(roving: Roving, snapshots: ViewSnapshots | None = None) -> tuple[Views, float]:
    """Fresh views brought to the log's end; the seconds it took (restoring the snapshot included)."""
    views, last = Views(), roving.recorder.max_notification_id()
    started = time.perf_counter()
    with Tailer(roving, views, snapshots=snapshots) as tailer:
        assert tailer.wait_for(last, timeout=600)
        elapsed = time.perf_counter() - started
    return views, elapsed


def picture(views: Views) -> tuple[int, int, int]:
    return len(views.workflows.list()), len(views.queue.rows()), views.position


def main(workflows: int, tail: int) -> dict:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    with tempfile.TemporaryDirectory() as scratch, NatsServer(Path(scratch) / "nats") as server:
        roving = Roving(env={"PERSISTENCE_MODULE": "adapters.jetstream", "ROVING_NATS_URL": server.url,
                             "ROVING_CLUSTER": "bench"})
        submit(roving, workflows)
        snapshots = ViewSnapshots(Path(scratch) / "views.snapshot", b"k" * 32, roving.recorder)
        views, _ = caught_up(roving)
        started = time.perf_counter()
        snapshots.save(views)
        save_seconds = time.perf_counter() - started
        forked = ViewSnapshots(Path(scratch) / "forked.snapshot", b"k" * 32, roving.recorder)
        forked.save_in_child(views)  # what the tailer does every so many events: the tail pauses for the fork
        started = time.perf_counter()
        forked.reap(wait=600)
        child_seconds = forked.last_pause + time.perf_counter() - started
        at_snapshot = views.position
        submit(roving, tail)
        del views  # each measurement starts like a fresh process: no other views alive for the collector to walk
        rebuilt, rebuild_seconds = caught_up(roving)
        events, expected = rebuilt.position, picture(rebuilt)
        del rebuilt
        gc.collect()
        restored, restore_seconds = caught_up(roving, ViewSnapshots(snapshots.path, b"k" * 32, roving.recorder))
        assert picture(restored) == expected and expected[0] == workflows + tail
        roving.close()
        return {"bench": "views_restart", "workflows": workflows + tail, "events": events,
                "tail_events": events - at_snapshot, "rebuild_seconds": round(rebuild_seconds, 3),
                "rebuild_events_per_s": round(events / rebuild_seconds),
                "restore_seconds": round(restore_seconds, 3),
                "restore_speedup": round(rebuild_seconds / restore_seconds, 2),
                "snapshot_save_seconds": round(save_seconds, 3),
                "periodic_save_pause_seconds": round(forked.last_pause, 4),
                "periodic_save_child_seconds": round(child_seconds, 3),
                "pause_vs_foreground_save_ratio": round(forked.last_pause / save_seconds, 4),
                "snapshot_bytes": snapshots.path.stat().st_size}


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:3]]
    print(json.dumps(main(*(args + [2000, 20][len(args):]))))

"""Stopping `roving up` and starting it again on the same data dir: nothing is lost, and the views come back
from the snapshot the stop left, with only the log after it replayed. While it runs, periodic snapshots are
written by a forked child and the stack goes on answering."""

from __future__ import annotations

import time
from pathlib import Path

from tests.e2e.stack import LocalStack

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_a_restarted_stack_restores_its_views_from_the_snapshot_and_keeps_working(tmp_path):
    first = LocalStack(tmp_path, nodes=1, settings={"ROVING_VIEW_SNAPSHOT_EVERY": "10"}).start()
    try:
        before = first.submit((EXAMPLES / "hello.yaml").read_text(), "before")
        shown = first.wait_status(before, ("FINISHED", "FAILED"))
        events = first.events(before)
        first.wait(lambda: any("view_snapshot.saved" in line and "paused" in line  # only a child's save says it
                               for line in (tmp_path / "stack.log").read_text().splitlines()), 30, "a periodic snapshot")
    finally:
        first.stop()
    assert (tmp_path / "views.snapshot").exists()
    # two API workers: the restarted stack is ready after the old scheduler lease lapsed, and places "after" on the
    # node before its agent is back; the agent resumes the node's registration and runs it (registering anew evicted it)
    second = LocalStack(tmp_path, nodes=1, settings={"ROVING_API_WORKERS": "2"}).start()
    try:
        assert second.workflow(before) == shown and second.events(before) == events
        assert "view_snapshot.restored" in (tmp_path / "stack.log").read_text()
        after = second.submit((EXAMPLES / "hello.yaml").read_text(), "after")
        assert second.wait_status(after, ("FINISHED", "FAILED"))["status"] == "FINISHED"
    finally:
        second.stop()


def test_a_stopped_stack_answers_its_agents_held_polls_at_once_and_fails_no_request(tmp_path):
    stack = LocalStack(tmp_path, nodes=2).start()
    time.sleep(1)  # both agents are now holding a long poll (they wait up to 10 s for news)
    began = time.monotonic()
    stack.stop()
    took = time.monotonic() - began
    text = (tmp_path / "stack.log").read_text()
    assert took < 3, f"stopping took {took:.1f} s: held polls kept the server up until its graceful timeout"
    assert "status=500" not in text and "Traceback" not in text

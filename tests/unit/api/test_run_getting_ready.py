"""`roving run` on a terminal says what its job waits on before its output starts (the image pull, with its pace and
ETA), redrawn in place and cleared once the output begins; nothing without a terminal."""

from __future__ import annotations

import io
import time

from api.cli.run_progress import GettingReady


class Pulling:
    """The API as the run command's second connection sees it: the job's node pulling its image."""

    def __init__(self) -> None:
        self.closed = False

    def get(self, path, **_):
        if path.endswith("/events"):
            return {"events": [
                {"type": "Workflow.ImageProgressed", "stage": "run", "time": "2026-12-07T10:00:00Z",
                 "message": "pulling docker://pytorch: 1 of 5 blobs"},
                {"type": "Workflow.ImageProgressed", "stage": "run", "time": "2026-12-07T10:00:04Z",
                 "message": "pulling docker://pytorch: 3 of 5 blobs"}]}
        return {"name": "run-python", "status": "STARTED",
                "stages": [{"name": "run", "status": "STARTED", "node": "n1", "exit_code": None}]}

    def close(self) -> None:
        self.closed = True


def test_the_pull_shows_with_its_pace_until_the_output_begins_then_the_line_is_cleared():
    stream, looker = io.StringIO(), Pulling()
    with GettingReady(None, "wf", True, stream, looker) as ready:  # type: ignore[arg-type]
        deadline = time.monotonic() + 10
        while "ETA" not in stream.getvalue() and time.monotonic() < deadline:
            time.sleep(0.05)
        ready.stop()  # the job's first output
        shown = stream.getvalue()
    assert "\r\x1b[Kpulling docker://pytorch: 3 of 5 blobs  0.5 blobs/s  ETA 0:04" in shown
    assert shown.endswith("\r\x1b[K") and looker.closed


def test_without_a_terminal_nothing_is_drawn_and_nothing_is_asked():
    stream, looker = io.StringIO(), Pulling()
    looker.get = None  # asking would fail the test
    with GettingReady(None, "wf", False, stream, looker):  # type: ignore[arg-type]
        time.sleep(1.3)
    assert stream.getvalue() == ""

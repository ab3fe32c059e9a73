"""`roving object put|get` show a progress line on a terminal (bytes, rate, ETA), and nothing for scripts:
not with -o json, not when standard output or standard error is a pipe."""

from __future__ import annotations

import io
import sys

from api.cli.progress import Progress
from tests.unit.api.test_cli_objects import alice, api, run  # noqa: F401 - fixtures shared with the object tests

MIB = 1 << 20


def test_the_line_says_how_much_of_how_much_how_fast_and_how_long_yet():
    now = [0.0]
    stream = io.StringIO()
    meter = Progress("put object://user/big.bin", 200 * MIB, shown=True, stream=stream, clock=lambda: now[0])
    now[0] = 1.0
    meter.advance(50 * MIB)
    assert stream.getvalue() == "\r\x1b[Kput object://user/big.bin  50.0 MiB of 200.0 MiB (25%)  50.0 MiB/s  ETA 0:03"
    meter.finish()
    assert stream.getvalue().endswith("\r\x1b[K")  # cleared: the answer prints as it would without a terminal


def test_a_meter_not_shown_writes_nothing():
    stream = io.StringIO()
    meter = Progress("get x", 10, shown=False, stream=stream)
    meter.advance(10)
    meter.finish()
    assert stream.getvalue() == ""


def pretend_terminal(monkeypatch):
    """Both standard streams report a terminal (capsys's captures, installed for the test's body, say not)."""
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)


def test_put_and_get_draw_the_line_on_a_terminal(api, alice, capsys, tmp_path, monkeypatch):  # noqa: F811
    pretend_terminal(monkeypatch)
    (tmp_path / "big.bin").write_bytes(b"x" * 900 * 1024)
    code, _, err = run(api, alice, ["object", "put", str(tmp_path / "big.bin"), "progress/big.bin"], capsys)
    assert code == 0 and "put object://user/progress/big.bin" in err and "/s" in err and "of 900.0 KiB" in err
    code, _, err = run(api, alice, ["object", "get", "progress/big.bin", str(tmp_path / "back.bin")], capsys)
    assert code == 0 and "get object://user/progress/big.bin" in err and "of 900.0 KiB" in err


def test_json_output_and_pipes_get_no_progress_line(api, alice, capsys, tmp_path, monkeypatch):  # noqa: F811
    (tmp_path / "quiet.bin").write_bytes(b"y" * 800 * 1024)
    code, _, err = run(api, alice, ["object", "put", str(tmp_path / "quiet.bin"), "progress/", "-o", "json"], capsys)
    assert code == 0 and "/s" not in err
    code, _, err = run(api, alice, ["object", "get", "progress/quiet.bin", str(tmp_path / "q.bin")], capsys)
    assert code == 0 and "/s" not in err  # capsys: not a terminal
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    code, _, err = run(api, alice, ["object", "get", "progress/quiet.bin", str(tmp_path / "q2.bin")], capsys)
    assert code == 0 and "/s" not in err  # standard output still a pipe


class PullingWorkflow:
    """A client whose workflow's one stage pulls its image on the first look and has finished on the second."""

    def __init__(self) -> None:
        self.looks = 0

    def get(self, path, **_):
        if path.endswith("/events"):
            return {"events": [
                {"type": "Workflow.ImageProgressed", "stage": "hello", "message": "pulling docker://alpine: 1 of 3 blobs"},
                {"type": "Workflow.ImageProgressed", "stage": "hello", "message": "pulling docker://alpine: 2 of 3 blobs"},
                {"type": "Workflow.StageStarted", "stage": "hello", "message": "Started on n1"}]}
        self.looks += 1
        status = "STARTED" if self.looks == 1 else "FINISHED"
        return {"name": "w", "status": status,
                "stages": [{"name": "hello", "kind": "job", "status": status, "attempts": 1, "exit_code": None,
                            "node": "n1", "reason": ""}]}


def test_watching_on_a_terminal_shows_the_newest_pull_progress_under_the_stage_table(capsys, monkeypatch):
    from api.cli.workflow import watch

    pretend_terminal(monkeypatch)
    assert watch(PullingWorkflow(), "wf", interval=0) == 0
    out = capsys.readouterr().out
    assert "  hello: pulling docker://alpine: 2 of 3 blobs" in out and "1 of 3 blobs" not in out
    assert out.count("pulling docker://alpine") == 1  # the second look: finished, nothing under way

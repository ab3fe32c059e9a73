"""`workflow start --watch` off a terminal prints changes only; `workflow log --follow` prints output as it comes."""

from __future__ import annotations

import argparse
import importlib

from api.cli import workflow
from api.cli.workflow import Transitions


def detail(status: str, *stages: tuple[str, str, str | None, int | None]) -> dict:
    return {"name": "w", "status": status,
            "stages": [{"name": n, "status": s, "node": node, "exit_code": code} for n, s, node, code in stages]}


def test_watching_off_a_terminal_prints_one_line_per_change_and_nothing_when_nothing_changed():
    seen = Transitions()
    first = seen.changes(detail("PENDING", ("a", "PENDING", None, None), ("b", "WAITING", None, None)))
    assert [line.split("  ", 1)[1] for line in first] == ["workflow w: PENDING", "a: PENDING", "b: WAITING"]
    assert seen.changes(detail("PENDING", ("a", "PENDING", None, None), ("b", "WAITING", None, None))) == []
    later = seen.changes(detail("STARTED", ("a", "FINISHED", "n1", 0), ("b", "WAITING", None, None)))
    assert [line.split("  ", 1)[1] for line in later] == ["workflow w: STARTED", "a: FINISHED on n1 (exit 0)"]


class GrowingLog:
    """A client whose stage log grows by one line a read and whose workflow ends after the third look."""

    def __init__(self) -> None:
        self.reads = self.looks = 0

    def get(self, path: str, **_: object) -> object:
        if path.endswith("/log/s"):
            self.reads += 1
            return "".join(f"line {i}\n" for i in range(1, self.reads + 1))
        self.looks += 1
        return {"status": "FINISHED" if self.looks >= 3 else "STARTED"}


def test_log_follow_prints_each_new_line_once_and_reads_again_after_the_end(capsys):
    client = GrowingLog()
    args = argparse.Namespace(id="wf", stage="s", follow=True)
    workflow.log(args, client, interval=0)  # type: ignore[arg-type]
    assert capsys.readouterr().out == "line 1\nline 2\nline 3\n"
    assert client.reads == 3


def test_log_without_follow_reads_once(capsys):
    client = GrowingLog()
    workflow.log(argparse.Namespace(id="wf", stage="s", follow=False), client)  # type: ignore[arg-type]
    assert capsys.readouterr().out == "line 1\n" and client.looks == 0


def test_newest_first_is_accepted_as_order_by_minus_submitted(monkeypatch):
    cli_main = importlib.import_module("api.cli.main")
    seen = {}
    monkeypatch.setattr(cli_main, "execute", lambda args: seen.setdefault("order_by", args.order_by) and 0)
    assert cli_main.main(["workflow", "list", "--order-by", "-submitted"]) == 0
    assert seen["order_by"] == "-submitted"

"""`workflow start --watch` off a terminal prints changes only; `workflow log --follow` prints output as it comes."""

from __future__ import annotations

import argparse
import importlib

import httpx

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
    """A client whose stage log grows by one line (with a character cut across reads) a look and whose workflow
    ends after the third look; it answers offsets as the server does and counts the bytes it sends."""

    def __init__(self, offsets: bool = True) -> None:
        self.reads = self.looks = self.sent = 0
        self.offsets = offsets  # False: an older server that answers the whole log, whatever was asked
        self.log = b""

    def get(self, path: str, **_: object) -> object:
        if path.endswith("/log/s"):
            self.reads += 1
            return self.log.decode()
        self.looks += 1
        self.log += f"line {self.looks} \u00e9\n".encode()
        return {"status": "FINISHED" if self.looks >= 3 else "STARTED"}

    def send(self, method: str, path: str, params: dict) -> httpx.Response:
        self.reads += 1
        if not self.offsets:
            return httpx.Response(200, content=self.log)
        offset, limit = params["offset"], params["limit"]
        data = self.log[offset:offset + limit]
        self.sent += len(data)
        return httpx.Response(200, content=data, headers={"Roving-Log-Offset": str(offset)})


EXPECTED = "line 1 \u00e9\nline 2 \u00e9\nline 3 \u00e9\n"


def test_log_follow_reads_each_byte_of_a_growing_log_once_and_prints_it_once(capsys, monkeypatch):
    monkeypatch.setattr(workflow, "LOG_PAGE", 5)  # pages that cut lines and characters
    client = GrowingLog()
    workflow.log(argparse.Namespace(id="wf", stage="s", follow=True), client, interval=0)  # type: ignore[arg-type]
    assert capsys.readouterr().out == EXPECTED
    assert client.sent == len(EXPECTED.encode())


def test_log_follow_against_an_older_server_that_answers_whole_logs_prints_each_line_once(capsys):
    client = GrowingLog(offsets=False)
    workflow.log(argparse.Namespace(id="wf", stage="s", follow=True), client, interval=0)  # type: ignore[arg-type]
    assert capsys.readouterr().out == EXPECTED


def test_log_without_follow_reads_once(capsys):
    client = GrowingLog()
    client.log = b"line 0\n"
    workflow.log(argparse.Namespace(id="wf", stage="s", follow=False), client)  # type: ignore[arg-type]
    assert capsys.readouterr().out == "line 0\n" and client.looks == 0 and client.reads == 1


def test_newest_first_is_accepted_as_order_by_minus_submitted(monkeypatch):
    cli_main = importlib.import_module("api.cli.main")
    seen = {}
    monkeypatch.setattr(cli_main, "execute", lambda args: seen.setdefault("order_by", args.order_by) and 0)
    assert cli_main.main(["workflow", "list", "--order-by", "-submitted"]) == 0
    assert seen["order_by"] == "-submitted"

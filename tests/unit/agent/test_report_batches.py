"""Reports travel together: a round's reports take one fsync and one request, a short job's start and end share
one, and an older API without the batch route is sent one report a request."""

from __future__ import annotations

import json
import os
from uuid import uuid4

from adapters.outbox import Outbox
from tests.unit.agent.fake_api import A1, NODE_ID, FakeApi, alloc, report
from tests.unit.agent.test_agent_loop import assignment, drive


def test_a_short_jobs_start_and_end_reach_the_api_in_one_request(tmp_path):
    with FakeApi() as api:
        api.start = [assignment(A1, command=["true"])]
        drive(api, tmp_path, until=lambda: ("exited", 1, 0) in api.events(A1))
    assert api.events(A1) == [("started", 1, None), ("exited", 1, 0)]
    assert api.batches == [2]


def test_jobs_ending_together_are_reported_in_one_request(tmp_path):
    with FakeApi() as api:
        api.start = [assignment(alloc(i), command=["sleep", "0.3"]) for i in range(4)]
        drive(api, tmp_path, until=lambda: all(("exited", 1, 0) in api.events(alloc(i)) for i in range(4)))
    assert len(api.reports) == 8
    assert len(api.batches) < 8  # the ends of jobs that end within one round share a request
    assert max(api.batches) >= 2


def test_an_api_without_the_batch_route_is_sent_each_report_alone(tmp_path):
    with FakeApi() as api:
        api.batch_reports = False
        api.start = [assignment(A1, command=["true"])]
        drive(api, tmp_path, until=lambda: ("exited", 1, 0) in api.events(A1))
    assert api.events(A1) == [("started", 1, None), ("exited", 1, 0)]
    assert api.batches == []


def test_a_rounds_reports_are_flushed_to_disk_once(tmp_path, monkeypatch):
    flushes = []
    real = os.fdatasync
    monkeypatch.setattr(os, "fdatasync", lambda fd: flushes.append(fd) or real(fd))
    outbox = Outbox(tmp_path)
    outbox.put_many([report(alloc(i), 1, "exited", exit_code=0) for i in range(5)])
    assert len(flushes) == 1
    assert [e.allocation for e in Outbox(tmp_path).pending()] == [alloc(i) for i in range(5)]


def test_answered_reports_leave_and_the_journal_is_emptied_once_nothing_waits(tmp_path):
    outbox = Outbox(tmp_path)
    first, second = outbox.put_many([report(A1, 1, "started"), report(A1, 1, "exited", exit_code=0)])
    outbox.done(first)
    assert [e.key for e in Outbox(tmp_path).pending()] == [(A1, 1, "exited")]
    outbox.done(second)
    assert len(Outbox(tmp_path)) == 0
    assert (tmp_path / "journal.jsonl").stat().st_size == 0


def test_a_torn_last_line_is_skipped_and_what_came_before_survives(tmp_path):
    outbox = Outbox(tmp_path)
    outbox.put(report(A1, 1, "exited", exit_code=3))
    outbox.close()
    with open(tmp_path / "journal.jsonl", "ab") as journal:
        journal.write(b'{"put": 2, "body": {"allocation_id": "a2", "ep')  # the crash came mid-write
    assert [e.key for e in Outbox(tmp_path).pending()] == [(A1, 1, "exited")]


def test_reports_an_older_agent_left_one_file_each_are_taken_in_order_and_sent(tmp_path):
    for sequence, event in ((7, "started"), (9, "exited")):
        body = {"node_id": NODE_ID, "allocation_id": A1, "epoch": 2, "event": event,
                "exit_code": 0 if event == "exited" else None, "reason": "", "ports": []}
        (tmp_path / f"{sequence:012d}-a1-2-{event}.json").write_text(json.dumps(body))
    assert [e.key[2] for e in Outbox(tmp_path).pending()] == ["started", "exited"]
    assert not list(tmp_path.glob("*.json"))
    assert [e.key[2] for e in Outbox(tmp_path).pending()] == ["started", "exited"]


def test_an_exit_signalled_while_the_last_answer_was_applied_is_handled_at_once_not_at_the_next_poll():
    import asyncio
    import time

    from api.agent.poll import _idle

    async def scenario() -> float:
        stop, wake = asyncio.Event(), asyncio.Event()
        held = asyncio.ensure_future(asyncio.sleep(30))  # a long poll the server holds
        wake.set()  # a job ended while the agent was busy applying the last answer
        began = time.monotonic()
        await _idle(stop, wake, held, interval=5.0)
        held.cancel()
        return time.monotonic() - began

    assert asyncio.run(scenario()) < 0.5


def test_an_agent_cuts_a_megabyte_reason_before_it_journals_or_sends_the_report():
    from api.agent.messages import report_of
    from domain.agent_protocol import MAX_REPORT_REASON
    made = report_of(str(uuid4()), str(uuid4()), 1, "exited", exit_code=1, reason="cannot start: " + "e" * 2**20)
    assert len(made.reason) == MAX_REPORT_REASON and made.reason.startswith("cannot start: ")


def test_a_batch_too_large_for_the_api_is_sent_again_in_halves_and_every_exit_is_recorded(tmp_path):
    with FakeApi() as api:
        api.most_reports = 1  # a body of more is refused (413): resent as it was, it would be refused forever
        api.start = [assignment(A1, command=["true"])]
        drive(api, tmp_path, until=lambda: ("exited", 1, 0) in api.events(A1), timeout=6)
    assert api.events(A1) == [("started", 1, None), ("exited", 1, 0)]
    assert api.batches == [1, 1]

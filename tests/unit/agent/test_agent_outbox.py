"""Reports survive a control plane that cannot answer and an agent that restarts; a recycled pid is not a job."""

from __future__ import annotations

import subprocess

from adapters.adoption import JobFiles, Orphan, alive, start_time
from adapters.outbox import Outbox
from tests.unit.agent.fake_api import A1, FakeApi, report
from tests.unit.agent.test_agent_loop import assignment, drive


def test_an_exit_answered_503_is_retried_until_recorded_and_the_job_is_not_fenced(tmp_path):
    with FakeApi() as api:
        api.start = [assignment(A1, command=["true"])]
        api.unavailable_reports = 3  # 'started' and the first tries of 'exited' find the log down
        drive(api, tmp_path, until=lambda: ("exited", 1, 0) in api.events(A1))
    assert api.events(A1) == [("started", 1, None), ("exited", 1, 0)]


def test_reports_left_by_a_stopped_agent_are_delivered_by_the_next_one_before_it_registers(tmp_path):
    with FakeApi() as api:
        api.start = [assignment(A1, command=["sleep", "30"])]
        api.unavailable_reports = 10**6
        drive(api, tmp_path, until=lambda: len(api.heartbeats) >= 2, timeout=5)  # stopping kills the job
        assert api.events(A1) == []
        waiting = Outbox(tmp_path / "work" / ".roving-agent" / "outbox").pending()
        assert [e.key[2] for e in waiting] == ["started", "exited"]
        api.unavailable_reports, api.start = 0, []
        registered_before = len(api.registrations)
        drive(api, tmp_path, until=lambda: len(api.registrations) > registered_before)
    assert [event for event, _, _ in api.events(A1)] == ["started", "exited"]
    assert len(Outbox(tmp_path / "work" / ".roving-agent" / "outbox")) == 0


def test_a_fenced_report_stops_the_copy_running_here(tmp_path):
    def stopped_after_start() -> bool:
        return bool(api.events(A1)) and any(h["running"] == [] for h in api.heartbeats[2:])

    with FakeApi() as api:
        api.start = [assignment(A1, command=["sleep", "30"])]
        api.refused_reports = {(A1, "started")}
        drive(api, tmp_path, until=stopped_after_start)
        assert stopped_after_start()
    assert [event for event, _, _ in api.events(A1)] == ["started"]  # fenced: its exit is not reported


def test_the_same_report_put_twice_waits_once(tmp_path):
    outbox = Outbox(tmp_path)
    body = report(A1, 2, "exited", exit_code=0)
    outbox.put(body)
    outbox.put(body)
    assert len(Outbox(tmp_path)) == 1


def test_ready_unready_and_ready_again_are_three_reports_kept_in_order(tmp_path):
    outbox = Outbox(tmp_path)
    for change, event in enumerate(["ready", "unready", "ready"]):
        outbox.put(report(A1, 2, event, change=change))
    assert [e.body.event for e in Outbox(tmp_path).pending()] == ["ready", "unready", "ready"]


def test_a_recycled_pid_is_never_taken_for_an_adopted_job(tmp_path):
    bystander = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        _, born = start_time(bystander.pid)
        assert alive(bystander.pid, born)
        assert not alive(bystander.pid, born + 1)
        (tmp_path / "exit").write_text("3\n")
        assert Orphan(bystander.pid, born + 1, JobFiles(tmp_path)).poll() == 3  # the job ended; this is another
        assert Orphan(bystander.pid, born, JobFiles(tmp_path)).poll() is None
    finally:
        bystander.kill()
        bystander.wait()

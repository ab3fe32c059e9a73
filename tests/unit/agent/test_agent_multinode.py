"""A multinode rank on the agent: stopped when a peer fails, and its end always reported once."""

from __future__ import annotations

from tests.unit.agent.fake_api import A1, FakeApi
from tests.unit.agent.test_agent_loop import assignment, drive

RANK_STOP = {"epoch": 1, "workflow_id": "wf-1", "state": "RUNNING", "rank_stop": True,
             "reason": "rank 1 failed: the job stops on every node"}


def test_a_rank_told_to_stop_before_it_ran_reports_its_end_once(tmp_path):
    with FakeApi() as api:
        api.stop = [{"allocation_id": A1, "stage": A1, **RANK_STOP}]
        drive(api, tmp_path, until=lambda: len(api.heartbeats) >= 3 and api.events(A1))
    assert api.events(A1) == [("exited", 1, 143)]
    [report] = [r for r in api.reports if r["allocation_id"] == A1]
    assert report["reason"] == "not started: rank 1 failed: the job stops on every node"


def test_a_running_rank_is_stopped_when_its_peer_failed(tmp_path):
    def stop_once_started() -> bool:
        if api.events(A1) == [("started", 1, None)]:
            api.start, api.stop = [], [{"allocation_id": A1, "stage": A1, **RANK_STOP}]
        return api.events(A1)[-1:] == [("exited", 1, 143)] and len(api.heartbeats) >= 3

    with FakeApi() as api:
        api.start = [assignment(A1, script="sleep 30")]
        drive(api, tmp_path, until=stop_once_started)
    assert api.events(A1) == [("started", 1, None), ("exited", 1, 143)]

"""A memlock limit that cannot be set as asked is said: on the job's stderr when `ulimit` refuses, and as an event
on the stage when the agent's hard limit caps it below the memory request."""

from __future__ import annotations

import resource
import subprocess
from datetime import UTC, datetime
from uuid import UUID

import adapters.launch as launch
import api.agent.agent as agent_module
from domain.app.ids import allocation_id
from domain.tenancy import Role, Source
from tests.unit.agent.fake_api import A1, FakeApi
from tests.unit.agent.test_agent_loop import assignment, drive
from tests.unit.api.harness import JOB, Api, token

AGENT = token("agent", Role.USER, source=Source.AGENT)


def test_a_memlock_limit_ulimit_refuses_is_said_on_the_jobs_stderr_not_swallowed():
    script = launch.SCRIPT.replace("@SETPRIV@", "setpriv")
    done = subprocess.run(["/bin/sh", "-c", script, "roving-launch", "", "-l not-a-size", "", "/bin/echo", "ran"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and done.stdout == "ran\n"  # the job still runs
    assert "roving: the memlock limit (ulimit -l not-a-size KiB) could not be set" in done.stderr


def test_without_root_a_hard_limit_below_the_request_is_a_note_naming_both_sizes(monkeypatch):
    monkeypatch.setattr(launch, "raises_limits", lambda: False)
    monkeypatch.setattr(launch.resource, "getrlimit", lambda which: (64 << 10, 64 << 10))
    note = launch.memlock_note(1 << 30)
    assert note is not None and note.startswith("memlock limit is 64 KiB, not the memory request of 1 GiB")
    assert launch.memlock_note(32 << 10) is None  # within the hard limit: set as asked
    monkeypatch.setattr(launch.resource, "getrlimit", lambda which: (64 << 10, resource.RLIM_INFINITY))
    assert launch.memlock_note(1 << 30) is None


def test_as_root_the_limit_is_set_as_asked_and_nothing_is_noted(monkeypatch):
    monkeypatch.setattr(launch, "raises_limits", lambda: True)
    assert launch.memlock_note(1 << 30) is None
    assert launch._memlock(1 << 30) == f"-l {1 << 20}"


def test_root_without_cap_sys_resource_is_capped_by_its_hard_limit_and_told_so_not_refused(monkeypatch, tmp_path):
    status = tmp_path / "status"
    status.write_text("Name:\tagent\nCapEff:\t000001fffeffffff\n")  # every capability but CAP_SYS_RESOURCE (24)
    monkeypatch.setattr(launch.os, "geteuid", lambda: 0)
    assert launch.raises_limits(str(status)) is False
    capable = tmp_path / "capable"
    capable.write_text("Name:\tagent\nCapEff:\t000001ffffffffff\n")
    assert launch.raises_limits(str(capable)) is True
    monkeypatch.setattr(launch, "raises_limits", lambda: False)
    monkeypatch.setattr(launch.resource, "getrlimit", lambda which: (8 << 20, 8 << 20))
    assert launch._memlock(1 << 30) == f"-S -l {8 << 10}"  # the soft limit, which any process may raise to its hard one
    assert launch.memlock_note(1 << 30).startswith("memlock limit is 8 MiB, not the memory request of 1 GiB")


def test_an_agents_note_is_an_event_on_the_stage():
    api = Api()
    node = api.request("POST", "/v4/agent/register", AGENT,
                       json={"name": "n1", "cpu": 4, "memory": 8 * 2**30, "definition": "local"}).json()
    workflow = api.request("POST", "/v4/workflows", api.admin, json={"name": "w", "definition": JOB}).json()["id"]
    aid = allocation_id(UUID(workflow), "hello", 1)
    epoch = api.services.roving.place(aid, [UUID(node["node_id"])], "scheduler", datetime.now(UTC))
    text = "memlock limit is 64 KiB, not the memory request of 1 GiB"
    body = {"node_id": node["node_id"], "allocation_id": str(aid), "epoch": epoch, "event": "note", "reason": text}
    assert api.request("POST", "/v4/agent/reports", AGENT, json=body).status_code == 200
    api.services.tailer.wait_for(api.services.roving.last_position)
    events = api.request("GET", f"/v4/workflows/{workflow}/events", api.admin).json()["events"]
    assert {"stage": "hello", "message": text} in [{"stage": e["stage"], "message": e["message"]} for e in events]


NOTE = "memlock limit is 64 KiB, not the memory request of 1 GiB"


def test_an_agents_memlock_note_travels_with_the_attempts_exit_in_one_request(tmp_path, monkeypatch):
    monkeypatch.setattr(agent_module, "memlock_note", lambda memory: NOTE if memory else None)
    with FakeApi() as api:
        api.start = [assignment(A1, command=["true"], memory_bytes=1 << 30)]
        drive(api, tmp_path, until=lambda: ("exited", 1, 0) in api.events(A1))
    assert api.events(A1) == [("started", 1, None), ("note", 1, None), ("exited", 1, 0)]
    assert [r["reason"] for r in api.reports if r["event"] == "note"] == [NOTE]
    assert api.batches == [3]  # no request of its own: the note shares the exit's (and so its commit)
    assert not [path for path, _ in api.tokens_seen if path == "/v4/agent/reports"]


def test_an_api_older_than_the_note_still_hears_the_exit_of_a_batch_that_held_one(tmp_path, monkeypatch):
    monkeypatch.setattr(agent_module, "memlock_note", lambda memory: NOTE if memory else None)
    with FakeApi() as api:
        api.knows_note = False
        api.start = [assignment(A1, command=["true"], memory_bytes=1 << 30)]
        drive(api, tmp_path, until=lambda: ("exited", 1, 0) in api.events(A1))
    assert api.events(A1) == [("started", 1, None), ("exited", 1, 0)]

"""An agent restart does not kill running work: the next agent adopts the job, or kills what was given up."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from adapters.adoption import alive
from adapters.executor import Executor
from adapters.outbox import Outbox
from tests.integration.test_executor import Recorder
from tests.unit.agent.fake_api import A1, FakeApi
from tests.unit.agent.job_pids import host_pid
from tests.unit.agent.test_agent_loop import assignment

AGENT = "import sys; from api.agent.main import agent_main; sys.exit(agent_main(sys.argv[1:]))"
CRASHING_STARTER = """
import os, sys, time
from adapters.executor import Executor, RunSpec
from adapters.runspec import local_spec
job = local_spec(allocation_id=sys.argv[3], epoch=3, workflow_id="wf-1", stage="train", script=sys.argv[2])
Executor(sys.argv[1], kill_grace=0.3).start(job, lambda *_: None, lambda *_: None)
time.sleep(0.3)
os._exit(0)  # no cleanup, no kill: as a SIGKILLed agent leaves it
"""


@pytest.fixture
def root():
    """A work root any job user can reach (a root agent runs jobs as nobody; pytest's tmp_path is 0700)."""
    path = Path(tempfile.mkdtemp(prefix="roving-adoption-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def until(predicate, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.02)
    return predicate()


def start_agent(api: FakeApi, workdir: Path) -> subprocess.Popen:
    argv = [sys.executable, "-c", AGENT, "--node", "n1", "--api", api.url, "--cpus", "2", "--memory", "1GiB",
            "--workdir", str(workdir), "--heartbeat", "0.2", "--poll", "0.05", "--kill-grace", "0.3"]
    log = open(workdir.parent / "agents.log", "ab")  # noqa: SIM115 - the child holds it; kept for a post-mortem
    try:
        return subprocess.Popen(argv, env=os.environ | {"ROVING_TOKEN": "tok"}, stdout=log, stderr=subprocess.STDOUT)
    finally:
        log.close()


def stop(agent: subprocess.Popen) -> None:
    agent.send_signal(signal.SIGTERM)
    agent.wait(15)


def started(api: FakeApi, workdir: Path) -> bool:
    """Reported and out of the outbox (a kill in between would have the next agent send it again, harmlessly)."""
    outbox = workdir / ".roving-agent" / "outbox"
    return api.events(A1) == [("started", 1, None)] and len(Outbox(outbox)) == 0


def test_an_executor_adopts_a_job_whose_agent_died_and_gets_its_output_and_exit_code(root):
    starter = subprocess.run([sys.executable, "-c", CRASHING_STARTER, str(root / "work"),
                              "echo before; sleep 1; echo after >&2; exit 5", A1], timeout=30)
    assert starter.returncode == 0
    executor = Executor(root / "work", kill_grace=0.3)
    (files, state), = executor.found()
    assert state.spec.allocation_id == A1 and alive(state.pid, state.born)
    recorder = Recorder()
    running = executor.adopt(files, state, recorder.output, recorder.exit)
    assert running.wait(10) == (5, "exited with code 5")
    assert recorder.exits == [(5, "exited with code 5")]
    assert recorder.text("stderr") == "after\n"  # written after the adoption, read through the FIFO
    running.release()
    assert executor.found() == []


def test_an_adopted_job_ended_while_no_agent_watched_reports_its_recorded_exit_code(root):
    subprocess.run([sys.executable, "-c", CRASHING_STARTER, str(root / "work"), "exit 7", A1], timeout=30, check=True)
    executor = Executor(root / "work", kill_grace=0.3)
    (files, state), = executor.found()
    assert until(lambda: not alive(state.pid, state.born), 5)
    assert executor.adopt(files, state, *(lambda *_: None,) * 2).wait(5) == (7, "exited with code 7")


def test_a_job_survives_an_agent_kill_and_its_exit_is_reported_once_by_the_next_agent(root):
    workdir = root / "work"
    with FakeApi() as api:
        api.start = [assignment(A1, script="echo $$ > pid; echo ran >> runs; sleep 2; exit 5")]
        first = start_agent(api, workdir)
        try:
            assert until(lambda: started(api, workdir))
        finally:
            first.kill()
            first.wait()
        pid = host_pid(workdir)  # not the job's `$$`: see tests.unit.agent.job_pids
        assert alive(pid, None), "the job died with its agent"
        beats = len(api.heartbeats)
        began = time.monotonic()
        second = start_agent(api, workdir)
        try:
            assert until(lambda: len(api.heartbeats) > beats)
            adopted_in = time.monotonic() - began
            assert until(lambda: ("exited", 1, 5) in api.events(A1))
            time.sleep(0.5)  # a second exit report would arrive by now
        finally:
            stop(second)
    print(f"adopted in {adopted_in:.2f}s")
    assert api.events(A1) == [("started", 1, None), ("exited", 1, 5)]
    assert len(api.registrations) == 1  # resumed under the first registration: registering anew loses the work
    assert (workdir / "wf-1" / f"{A1}-1" / "runs").read_text() == "ran\n"
    assert not any((workdir / ".roving-agent" / "jobs").iterdir())


def test_an_adopted_job_the_control_plane_no_longer_places_here_is_killed_without_a_report(root):
    workdir = root / "work"
    with FakeApi() as api:
        api.start = [assignment(A1, script="echo $$ > pid; sleep 60")]
        first = start_agent(api, workdir)
        assert until(lambda: started(api, workdir))
        first.kill()
        first.wait()
        pid = host_pid(workdir)
        api.start = []  # given up meanwhile (its lease lapsed and it was placed elsewhere)
        second = start_agent(api, workdir)
        try:
            assert until(lambda: not alive(pid, None))
            assert until(lambda: len(api.heartbeats) > 3 and api.heartbeats[-1]["running"] == [])
        finally:
            stop(second)
    assert api.events(A1) == [("started", 1, None)]
    assert len(api.registrations) == 1


def test_an_agent_whose_registration_was_given_up_kills_the_adopted_job_and_registers_anew(root):
    workdir = root / "work"
    with FakeApi() as api:
        api.start = [assignment(A1, script="echo $$ > pid; sleep 60")]
        first = start_agent(api, workdir)
        assert until(lambda: started(api, workdir))
        first.kill()
        first.wait()
        pid = host_pid(workdir)
        api.start, api.stale_heartbeats = [], 1  # the node was declared lost while its agent was down
        second = start_agent(api, workdir)
        try:
            assert until(lambda: len(api.registrations) == 2)
            assert until(lambda: not alive(pid, None))
        finally:
            stop(second)
    assert api.events(A1) == [("started", 1, None)]

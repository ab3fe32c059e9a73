"""`roving up` keeps its local agents: a dead one is started again, one that keeps dying waits longer each time."""

from __future__ import annotations

import sys
import time

import pytest

from api.composition.settings import SettingsError, load_settings
from api.up import local_agents
from api.up.local_agents import LocalAgents

DIES = [sys.executable, "-c", "import sys; sys.exit(3)"]
LIVES = [sys.executable, "-c", "import time; time.sleep(60)"]


def wait_until(check, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return False


def test_a_killed_agent_is_started_again_with_the_same_command(tmp_path, monkeypatch):
    monkeypatch.setattr(local_agents, "FIRST_PAUSE", 0.05)
    agents = LocalAgents(check_every=0.02)
    agents.add("local-1", LIVES, tmp_path / "agent.log")
    first = agents.processes[0]
    first.kill()
    try:
        assert wait_until(lambda: agents.processes[0] is not first and agents.processes[0].poll() is None)
        assert agents.processes[0].args == LIVES and agents.kept[0].restarts == 1
    finally:
        agents.stop()
    assert all(p.poll() is not None for p in agents.processes), "stop ends the agents and starts none again"


def test_an_agent_that_keeps_dying_waits_twice_as_long_each_time(tmp_path, monkeypatch):
    monkeypatch.setattr(local_agents, "FIRST_PAUSE", 0.05)
    agents = LocalAgents(check_every=0.01)
    began = time.monotonic()
    agents.add("local-1", DIES, tmp_path / "agent.log")
    try:
        assert wait_until(lambda: agents.kept[0].restarts >= 3)
        assert time.monotonic() - began >= 0.05 + 0.1 + 0.2  # three pauses, each twice the one before
        assert agents.kept[0].backoff.pause in (0.4, 0.8)  # the next pause (0.8 once the fourth death was seen)
    finally:
        agents.stop()


def test_without_restart_a_dead_agent_stays_dead(tmp_path):
    agents = LocalAgents(check_every=0.01, restart=False)
    agents.add("local-1", DIES, tmp_path / "agent.log")
    time.sleep(0.5)
    assert agents.kept[0].restarts == 0 and agents.processes[0].poll() == 3


def test_the_restart_setting_is_a_flag_named_in_its_error():
    assert load_settings({"ROVING_LOCAL_AGENT_RESTART": "no"}).local_agent_restart is False
    assert load_settings({}).local_agent_restart is True
    with pytest.raises(SettingsError, match="ROVING_LOCAL_AGENT_RESTART"):
        load_settings({"ROVING_LOCAL_AGENT_RESTART": "maybe"})


class Recorded:
    """Stands in for the keeper: what `roving up` would start, and how it is stopped."""

    def __init__(self) -> None:
        self.added: list[tuple[str, list[str], dict[str, str] | None]] = []
        self.kept: list = []
        self.stopped_with: int | None = None

    def add(self, name, argv, log_path, env=None) -> None:
        self.added.append((name, argv, env))

    def stop(self, grace: float = 10.0, signum: int = 15) -> None:
        self.stopped_with = signum


def stack_with_recorded_agents(tmp_path, **env: str):
    from api.composition.stack import Stack

    settings = load_settings({"ROVING_DATA_DIR": str(tmp_path), "ROVING_WORK_DIR": str(tmp_path / "work"), **env})
    stack = Stack(settings)
    stack.agents = Recorded()
    (tmp_path / "agent.token").write_text("rv1.agent-token\n")
    return stack


def test_local_agents_get_their_token_by_environment_and_no_command_line_names_it(tmp_path):
    stack = stack_with_recorded_agents(tmp_path)
    stack.start_local_agents(2, 2, "1GiB")
    for _name, argv, env in stack.agents.added:
        assert not any("agent.token" in part or str(tmp_path) == part for part in argv), argv
        assert env["ROVING_TOKEN"] == "rv1.agent-token" and "--address" in argv


def test_a_graceful_stop_detaches_the_local_agents_unless_told_to_stop_their_jobs(tmp_path):
    import signal

    stack = stack_with_recorded_agents(tmp_path)
    stack.stop_local_agents()
    assert stack.agents.stopped_with == signal.SIGUSR1
    stopping = stack_with_recorded_agents(tmp_path, ROVING_STOP_LOCAL_JOBS="true")
    stopping.stop_local_agents()
    assert stopping.agents.stopped_with == signal.SIGTERM

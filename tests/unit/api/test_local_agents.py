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

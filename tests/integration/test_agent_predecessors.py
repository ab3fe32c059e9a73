"""`roving up` starts one agent a node: an agent a crashed predecessor left on a node's work directory is asked to
detach, and ended if it lingers, before the new one starts there; agents of other work directories are left alone."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from api.up.local_agents import agents_on, outlive_predecessors

# what a local agent's command line looks like to /proc (api.composition.local_pool.AGENT_START), with a body that
# detaches on SIGUSR1 (exits) or, `stubborn`, ignores it as a hung agent would
AGENT = "import signal, sys, time; {handler}; print('ready', flush=True); from api.agent.main import agent_main; " \
    "time.sleep(60)"


def agent(workdir: Path, stubborn: bool = False) -> subprocess.Popen:
    handler = "signal.signal(signal.SIGUSR1, signal.SIG_IGN)" if stubborn else \
        "signal.signal(signal.SIGUSR1, lambda *_: sys.exit(0))"
    process = subprocess.Popen([sys.executable, "-c", AGENT.format(handler=handler), "--node", "local-1",
                                "--workdir", str(workdir)], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline() == "ready\n"
    return process


def ended(process: subprocess.Popen) -> None:
    process.kill()
    process.wait()
    if process.stdout is not None:
        process.stdout.close()


def test_a_predecessor_agent_on_the_node_detaches_before_the_new_one_starts(tmp_path: Path) -> None:
    mine, other = agent(tmp_path / "local-1"), agent(tmp_path / "local-2")
    try:
        began = time.monotonic()
        assert outlive_predecessors(tmp_path / "local-1", signal.SIGUSR1, wait=10) == [mine.pid]
        assert mine.wait(1) == 0 and time.monotonic() - began < 5
        assert other.poll() is None, "an agent of another node was touched"
    finally:
        for process in (mine, other):
            ended(process)


def test_a_predecessor_agent_that_does_not_go_is_killed_after_the_wait(tmp_path: Path) -> None:
    stubborn = agent(tmp_path / "local-1", stubborn=True)
    try:
        outlive_predecessors(tmp_path / "local-1", signal.SIGUSR1, wait=1)
        assert stubborn.wait(5) == -signal.SIGKILL
        assert agents_on(tmp_path / "local-1") == []
    finally:
        ended(stubborn)

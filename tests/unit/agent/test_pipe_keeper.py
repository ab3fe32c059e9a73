"""A keeper holds a detached job's pipes with nothing of its agent's: not the token, not the stack's data dir."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

import structlog

from adapters.adoption import JobFiles
from api.agent.pipe_keeper import KEEPER, keep_pipes, release_pipes


def test_a_keeper_holds_the_jobs_pipes_without_the_agents_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("ROVING_TOKEN", "rv1.secret-agent-token")
    monkeypatch.setenv("ROVING_DATA_DIR", str(tmp_path / "data"))
    files = JobFiles(tmp_path / "jobs" / "a1-e1")
    files.create()
    keep_pipes(files, structlog.get_logger())
    pid = int((files.directory / KEEPER).read_text().split()[0])
    try:
        environment = Path(f"/proc/{pid}/environ")
        deadline = time.monotonic() + 5
        while b"PATH=" not in environment.read_bytes() and time.monotonic() < deadline:
            time.sleep(0.05)  # the spawned shell's environment, once it has exec'd
        found = dict(item.split(b"=", 1) for item in environment.read_bytes().split(b"\0") if b"=" in item)
        assert b"ROVING_TOKEN" not in found and b"ROVING_DATA_DIR" not in found
        held = set()
        for fd in os.listdir(f"/proc/{pid}/fd"):  # the shell's own pipes ($(date) each second) come and go
            with contextlib.suppress(FileNotFoundError):
                held.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
        assert {str(files.directory / "stdout"), str(files.directory / "stderr")} <= held
    finally:
        release_pipes(files)
    assert os.waitpid(pid, 0)[0] == pid  # killed (this test spawned it, so it is this process's to reap)
    assert not (files.directory / KEEPER).exists()

"""A running job's pid on this host, as the agent recorded it when it started the job.

A job's own `$$` is not that pid when the agent runs host jobs in bubblewrap's pid namespace, as it does for every
job when it runs as a user other than root: there `$$` is 1 or 2, and a test that signalled it (or its group, whose
id the host reports as 0) would signal something else entirely, or its own process group."""

from __future__ import annotations

import os
from pathlib import Path

from adapters.adoption import found_jobs


def host_pid(workdir: Path) -> int:
    """The pid of the one job an agent on `workdir` started (its state file's): a session leader of its own."""
    (_, state), = found_jobs(workdir / ".roving-agent" / "jobs")
    return state.pid


def kill_job(pid: int) -> None:
    """SIGKILL the job's process group, never the caller's own."""
    group = os.getpgid(pid)
    assert group not in (0, os.getpgrp()), f"job {pid} is in group {group}, the caller's: not killing it"
    os.killpg(group, 9)

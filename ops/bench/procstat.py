"""CPU figures of processes from /proc (Linux), for benchmarks that time a server and its helpers."""

from __future__ import annotations

import os
from pathlib import Path


def cpu_seconds(pid: int) -> float:
    """User and system CPU of a process so far (Linux /proc; 0.0 elsewhere)."""
    spent = _stat_seconds(Path(f"/proc/{pid}/stat"))
    return spent if spent is not None else 0.0


def _stat_seconds(stat: Path) -> float | None:
    """User and system CPU from a /proc stat file (a process's or a thread's); None when it is gone."""
    try:
        fields = stat.read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    """The process ids `pid` started (Linux /proc; none elsewhere)."""
    try:
        return [int(c) for t in Path(f"/proc/{pid}/task").iterdir() for c in (t / "children").read_text().split()]
    except OSError:
        return []


def thread_cpu(pid: int) -> dict[int, float]:
    """User and system CPU of each thread of a process so far, by thread id (Linux /proc; none elsewhere)."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return {}
    spent = {int(task.name): _stat_seconds(task / "stat") for task in tasks}
    return {tid: seconds for tid, seconds in spent.items() if seconds is not None}  # None: the thread ended meanwhile

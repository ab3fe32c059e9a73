"""CPU figures of processes from /proc (Linux), for benchmarks that time a server and its helpers."""

from __future__ import annotations

import os
from pathlib import Path


def cpu_seconds(pid: int) -> float:
    """User and system CPU of a process so far (Linux /proc; 0.0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    """The process ids `pid` started (Linux /proc; none elsewhere)."""
    try:
        return [int(c) for t in Path(f"/proc/{pid}/task").iterdir() for c in (t / "children").read_text().split()]
    except OSError:
        return []


def thread_cpu(pid: int) -> dict[int, float]:
    """User and system CPU of each thread of a process so far, by thread id (Linux /proc; none elsewhere)."""
    found = {}
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return {}
    for task in tasks:
        try:
            fields = (task / "stat").read_text().rpartition(")")[2].split()
        except OSError:  # the thread ended meanwhile
            continue
        found[int(task.name)] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return found

"""Process groups the agent started, on disk, so the next agent finds what a killed one left running.

A `kill -9` of the agent leaves its jobs running: their allocations are then given up by the control plane (the
new agent registers with a new epoch, or the lease lapses) and may be placed again, so an orphan would make the
job run twice, and finish after being recorded FAILED. Each started job's process group is recorded here with
the kernel's start time of its leader (so a recycled pid is never taken for it), and a starting agent kills every
group its predecessor left before it registers.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat), None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


class Leftovers:
    """One small file per running allocation: its process group and the leader's start time."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)

    def started(self, allocation_id: str, pid: int) -> None:
        record = {"allocation_id": allocation_id, "pgid": pid, "start_time": start_time(pid)}
        tmp = self.directory / f"{allocation_id}.tmp"
        tmp.write_text(json.dumps(record))
        tmp.replace(self.directory / f"{allocation_id}.json")

    def ended(self, allocation_id: str) -> None:
        (self.directory / f"{allocation_id}.json").unlink(missing_ok=True)

    def kill_all(self) -> list[str]:
        """Kill every recorded group whose leader is still the process we started; returns their allocations."""
        killed = []
        for path in sorted(self.directory.glob("*.json")):
            try:
                record = json.loads(path.read_text())
                pgid, born = int(record["pgid"]), record.get("start_time")
            except (OSError, ValueError, KeyError):
                path.unlink(missing_ok=True)
                continue
            if born is not None and start_time(pgid) == born:
                try:
                    os.killpg(pgid, signal.SIGKILL)
                    killed.append(str(record["allocation_id"]))
                except ProcessLookupError:
                    pass
            path.unlink(missing_ok=True)
        return killed

"""Job output pipes held open while no agent reads them. A FIFO that no process holds open loses what its pipe
buffer held: a job that writes its last lines and ends while its agent is detached (`roving up` stopped) would
take them along. So a detaching agent leaves each job's FIFOs held by a keeper process (a shell holding
read-write ends, reading nothing), and the agent that adopts the job stops the keeper once its own readers are
open: the output waits in the pipe, in order, for the next agent."""

from __future__ import annotations

import os
import signal
from typing import Any

from adapters.adoption import JobFiles, alive, start_time

KEEP_SECONDS = 7 * 24 * 3600  # a keeper whose job is never adopted again goes after this (the pipe with it)
KEEPER = "keeper"  # in the job's directory: the keeper's pid and start time
# holds the inherited ends while the job's directory is there (it goes with the job's end), KEEP_SECONDS at most
LOOP = 'end=$(($(date +%s) + $2)); while [ -d "$1" ] && [ "$(date +%s)" -lt "$end" ]; do sleep 2; done'
NULL = [(os.POSIX_SPAWN_OPEN, fd, "/dev/null", os.O_RDWR, 0) for fd in (0, 1, 2)]
# all a keeper's shell needs: never the agent's environment, which holds its token and names the stack's data dir
ENVIRONMENT = {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}


def keep_pipes(files: JobFiles, log: Any) -> None:
    """Hold the job's FIFOs open in a keeper of their own (its pid kept in the job's directory); not our child to
    wait for: its own session, its parent gone with this agent."""
    try:
        fds = files.open_writers()  # read-write: never blocks, and never a reader that takes the output
    except OSError as error:
        log.warning("agent.pipes_not_kept", directory=str(files.directory), error=repr(error))
        return
    try:
        for fd in fds.values():
            os.set_inheritable(fd, True)
        pid = os.posix_spawn("/bin/sh", ["/bin/sh", "-c", LOOP, "roving-pipe-keeper", str(files.directory),
                                         str(KEEP_SECONDS)], ENVIRONMENT, file_actions=NULL, setsid=True)
    except OSError as error:
        log.warning("agent.pipes_not_kept", directory=str(files.directory), error=repr(error))
        return
    finally:
        for fd in fds.values():
            os.close(fd)
    found = start_time(pid)
    (files.directory / KEEPER).write_text(f"{pid} {found[1] if found else 0}")


def release_pipes(files: JobFiles) -> None:
    """The adopting agent's readers are open: the keeper goes (only the one recorded, never a recycled pid)."""
    path = files.directory / KEEPER
    try:
        pid, born = (int(field) for field in path.read_text().split())
    except (OSError, ValueError):
        return
    if alive(pid, born):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    path.unlink(missing_ok=True)

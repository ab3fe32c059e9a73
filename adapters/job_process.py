"""A job's process on the node: started in its cgroup, as its user, writing to its FIFOs and exit file (by the vfork
launcher when it can), and the state a later agent needs to adopt it."""

from __future__ import annotations

import dataclasses
import os
import subprocess
from pathlib import Path

from adapters.adoption import JobFiles, JobState, start_time, wrapped
from adapters.build_plan import BUILD
from adapters.cgroups import Cgroup
from adapters.launch import launcher
from adapters.running import Running
from adapters.runspec import JobUser, RunSpec, limit_memlock
from adapters.transfer_plan import TRANSFER_KINDS


def child_setup(cgroup: Cgroup | None, memory: int | None, user: JobUser | None):
    """What the forked child does before exec, in this order: join the cgroup (every descendant is born in it),
    set the memlock limit (raising it needs root), then become the job's user for good."""
    def setup() -> None:
        if cgroup is not None:
            cgroup.join(os.getpid())
        if memory:
            limit_memlock(memory)
        if user is not None:
            os.setgroups(list(user.groups))
            os.setgid(user.gid)
            os.setuid(user.uid)
    return setup


def start_process(spec: RunSpec, argv: list[str], cwd: Path, env: dict[str, str], workdir: Path,
                  job_user: JobUser | None, cgroup: Cgroup | None, state_root: Path, grace: float) -> Running:
    """The wrapped process in `cgroup`, with its FIFOs under `state_root`; nothing of it is left when it cannot
    start."""
    files, readers = JobFiles.for_spec(state_root, spec), {}
    try:
        files.create()
        readers = files.open_readers()
        # a transfer is our code, run as the agent (the job user may not reach the agent's interpreter); it
        # stays inside the volume and gives what it writes to the job user (adapters/transfer.py)
        user = None if spec.kind in (*TRANSFER_KINDS, BUILD) else job_user
        proc = spawn(argv, cwd, env, cgroup, spec.memory_bytes, user, files)
    except BaseException:
        for fd in readers.values():
            os.close(fd)
        files.remove()
        if cgroup is not None:
            cgroup.remove()
        raise
    running = Running(spec, proc, workdir, grace, cgroup, files=files)
    running.readers = readers
    return running


def spawn(argv: list[str], cwd: Path, env: dict[str, str], cgroup: Cgroup | None, memory: int | None,
          user: JobUser | None, files: JobFiles) -> subprocess.Popen:
    """The wrapped job: stdin is the exit file (the wrapper writes the code there), stdout and stderr the FIFOs.
    Set up by a launcher shell when it can (adapters/launch.py: vfork, not a fork of the agent)."""
    writers, exit_fd = files.open_writers(), files.open_exit()
    launch = launcher(cgroup, memory, user)
    setup = child_setup(cgroup, memory, user) if launch is None else None
    try:
        return subprocess.Popen(
            [*(launch or []), *wrapped(argv)], cwd=cwd, env=env, stdin=exit_fd, stdout=writers["stdout"],
            stderr=writers["stderr"], start_new_session=True, preexec_fn=setup, close_fds=True,  # noqa: PLW1509
        )
    except subprocess.SubprocessError as error:  # preexec failed (cgroup gone, setuid refused): cannot start
        raise OSError(f"cannot set up the job's process: {error}") from error
    finally:
        for fd in (*writers.values(), exit_fd):
            os.close(fd)


def job_state(running: Running) -> JobState:
    """What the state directory keeps of a started job, so that a restarted agent can adopt it."""
    born = start_time(running.pid)
    cgroup = running.cgroup
    return JobState(
        spec=running.spec, workdir=str(running.workdir), pid=running.pid, born=born[1] if born else None,
        started_at=running.started_at, ran_on_host=running.ran_on_host, devices=running.devices,
        image_digest=running.pulled.digest if running.pulled is not None else "",
        cgroup_version=cgroup.version if cgroup else 0,
        cgroup_dirs={k: str(v) for k, v in cgroup.dirs.items()} if cgroup else {},
        limits=dataclasses.asdict(cgroup.limits) if cgroup else {},
    )

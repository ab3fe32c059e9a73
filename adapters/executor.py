"""Run one stage attempt as a process group in its own cgroup, as its user, in its image when the runtime is oci."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from adapters.cgroups import Cgroup, Hierarchy, Limits, size_text
from adapters.runtime.bwrap import OciRuntime
from adapters.runspec import (  # noqa: F401 - RunSpec, SpecError and unreachable are the executor's vocabulary too
    JobUser,
    RunSpec,
    SpecError,
    exit_code_of,
    format_seconds,
    inside,
    job_environment,
    limit_memlock,
    unreachable,
)

OnOutput = Callable[[str, bytes], None]
OnExit = Callable[[int, str], None]
UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_.\-\[\]]")
CHUNK = 64 * 1024
POLL = 0.05
PIDS_PER_ALLOCATION = 4096  # a fork bomb stops here, not at the node's pid_max


class Running:
    """One started process group: streams its output, enforces its timeout, can be canceled."""

    def __init__(self, spec: RunSpec, proc: subprocess.Popen, workdir: Path, grace: float,
                 cgroup: Cgroup | None = None, ran_on_host: bool = False):
        self.spec, self.proc, self.workdir, self.ran_on_host = spec, proc, workdir, ran_on_host
        self.grace, self.cgroup = grace, cgroup
        self.pulled = None  # the image this ran in (oci runtime), with how long its pull took
        self.result: tuple[int, str] | None = None
        self._reason: str | None = None
        self._stop = threading.Event()
        self._done = threading.Event()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def cancel(self, reason: str) -> None:
        """TERM the whole group now, KILL it after the grace period; the first reason given wins."""
        if self._reason is None:
            self._reason = reason
        self._signal(signal.SIGTERM)
        self._stop.set()

    def evict(self, reason: str = "evicted from node") -> None:
        self.cancel(reason)

    def wait(self, timeout: float | None = None) -> tuple[int, str] | None:
        """(exit code, reason) once the process exited and its output was read; None on timeout."""
        self._done.wait(timeout)
        return self.result

    def _signal(self, signum: int) -> None:
        """The process group, and in a cgroup every process of the job (a daemon left the group)."""
        try:
            os.killpg(self.proc.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass
        if self.cgroup is not None:
            self.cgroup.signal(signum)

    def _supervise(self, readers: list[threading.Thread], on_exit: OnExit) -> None:
        """Wait for exit (enforcing timeout and cancel), kill what is left, drain the pipes, then report once."""
        timeout = self.spec.execute_timeout
        deadline = time.monotonic() + timeout if timeout and timeout > 0 else None
        while self.proc.poll() is None and not self._stop.is_set():
            if deadline is not None and time.monotonic() >= deadline:
                self.cancel(f"execute timeout {format_seconds(timeout)} exceeded")
                break
            self._stop.wait(POLL)
        if self._stop.is_set() and not self._wait_for_exit(self.grace):
            self._signal(signal.SIGKILL)
            self.proc.wait()
        try:
            self._signal(signal.SIGKILL)  # stragglers would hold the pipes open and outlive the allocation
            if self.cgroup is not None:
                self.cgroup.kill()
            for reader in readers:
                reader.join()
            self.result = (exit_code_of(self.proc.returncode), self._exit_reason())
            if self.cgroup is not None:
                self.cgroup.remove()
            on_exit(*self.result)
        finally:
            self._done.set()

    def _wait_for_exit(self, seconds: float) -> bool:
        try:
            self.proc.wait(timeout=seconds)
            return True
        except subprocess.TimeoutExpired:
            return False

    def _exit_reason(self) -> str:
        code = self.proc.returncode
        if self._reason is not None:
            return self._reason
        if code != 0 and self.cgroup is not None and self.cgroup.limits.memory and self.cgroup.oom_kills():
            return f"out of memory: killed at its memory limit of {size_text(self.cgroup.limits.memory)}"
        if code < 0:
            return f"killed by signal {signal.Signals(-code).name}"
        return f"exited with code {code}"


def _pump(pipe, stream: str, on_output: OnOutput) -> None:
    """Forward a pipe's bytes as they arrive (not line-buffered), then close it."""
    with pipe:
        while chunk := os.read(pipe.fileno(), CHUNK):
            on_output(stream, chunk)


def child_setup(cgroup: Cgroup | None, memory: int | None, user: JobUser | None):
    """What the forked child does before exec, in this order: join the cgroup (every descendant is born in it),
    set the memlock limit (raising it needs root), then become the job's user for good."""
    def setup() -> None:
        if cgroup is not None:
            cgroup.join(os.getpid())
        if memory:
            limit_memlock(memory)
        if user is not None:
            os.setgroups([])
            os.setgid(user.gid)
            os.setuid(user.uid)
    return setup


class Executor:
    """Starts RunSpecs as local process groups under `<workdir_root>/<workflow_id>/<stage>-<attempt>`, each in
    its own cgroup when `cgroups` is given."""

    def __init__(self, workdir_root: Path, kill_grace: float = 10.0, cgroups: Hierarchy | None = None,
                 user: JobUser | None = None, runtime: OciRuntime | None = None,
                 pids_limit: int = PIDS_PER_ALLOCATION):
        self.workdir_root = Path(workdir_root).resolve()
        self.kill_grace, self.cgroups, self.user, self.pids_limit = kill_grace, cgroups, user, pids_limit
        self.runtime = runtime
        if user is not None:  # searchable, not listable: a job finds its own directory and no one else's
            self.workdir_root.mkdir(parents=True, exist_ok=True)
            if (owner := self.workdir_root.stat().st_uid) != os.geteuid():  # e.g. planted in /tmp by another user
                raise PermissionError(f"work directory {self.workdir_root} belongs to uid {owner}, not to the agent")
            self.workdir_root.chmod(0o711)

    def close(self) -> None:
        if self.cgroups is not None:
            self.cgroups.close()

    def workdir(self, spec: RunSpec) -> Path:
        workflow = UNSAFE_NAME.sub("_", spec.workflow_id).lstrip(".") or "_"
        stage = UNSAFE_NAME.sub("_", spec.stage).lstrip(".") or "_"
        return self.workdir_root / workflow / f"{stage}-{spec.attempt}"

    def start(self, spec: RunSpec, on_output: OnOutput, on_exit: OnExit) -> Running:
        """Prepare the work directory, start the process in its own session and cgroup, supervise it in threads."""
        workdir = self.workdir(spec)
        workdir.mkdir(parents=True, exist_ok=True)
        cwd = inside(workdir, spec.cwd or ".", "cwd")
        cwd.mkdir(parents=True, exist_ok=True)
        self._write_files(spec, workdir)
        argv = self._argv(spec, workdir)
        pulled = None
        if spec.image and self.runtime is not None:
            pulled = self.runtime.prepare(spec.image)
            argv = self.runtime.wrap(argv, pulled.rootfs, workdir, cwd, spec.network_isolated)
        if self.user is not None:
            self._hand_over(workdir)
        env = job_environment(spec, self.user, workdir)
        cgroup = self._cgroup(spec)
        try:
            proc = self._popen(argv, cwd, env, child_setup(cgroup, spec.memory, self.user))
        except BaseException:
            if cgroup is not None:
                cgroup.remove()
            raise
        running = Running(spec, proc, workdir, self.kill_grace, cgroup, ran_on_host=bool(spec.image) and not pulled)
        running.pulled = pulled
        readers = [
            threading.Thread(target=_pump, args=(proc.stdout, "stdout", on_output), daemon=True),
            threading.Thread(target=_pump, args=(proc.stderr, "stderr", on_output), daemon=True),
        ]
        for reader in readers:
            reader.start()
        threading.Thread(target=running._supervise, args=(readers, on_exit), daemon=True).start()
        return running

    def _hand_over(self, workdir: Path) -> None:
        """The stage's directory and everything in it belong to the job's user, closed to other users; the
        workflow's directory above stays the agent's and only searchable."""
        workdir.parent.chmod(0o711)
        uid, gid = self.user.uid, self.user.gid
        for top, dirs, files in os.walk(workdir):
            for name in (*dirs, *files):
                os.lchown(os.path.join(top, name), uid, gid)  # lchown: a symlink there is not followed
        os.chown(workdir, uid, gid)
        workdir.chmod(0o700)

    def _cgroup(self, spec: RunSpec) -> Cgroup | None:
        if self.cgroups is None:
            return None
        limits = Limits(memory=spec.memory or None, cpus=spec.cpu_cores or None, pids=self.pids_limit)
        return self.cgroups.create(f"{spec.allocation_id}-e{spec.epoch}", limits)

    @staticmethod
    def _write_files(spec: RunSpec, workdir: Path) -> None:
        for name, content in (spec.files or {}).items():
            # on the host an absolute path is re-rooted: a job must not write over the node's own files
            path = inside(workdir, name.lstrip("/"), "file")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content)

    @staticmethod
    def _argv(spec: RunSpec, workdir: Path) -> list[str]:
        """The script (given `#!/bin/sh` when it has no shebang) or command + args, never through a shell."""
        if spec.script is not None:
            script = spec.script if spec.script.startswith("#!") else "#!/bin/sh\n" + spec.script
            path = workdir / ".roving-script"
            path.write_text(script)
            path.chmod(0o700)
            return [str(path), *(spec.args or [])]
        command = [spec.command] if isinstance(spec.command, str) else list(spec.command or [])
        if not command:
            raise SpecError(f"stage {spec.stage!r} has neither a script nor a command")
        return command + list(spec.args or [])

    @staticmethod
    def _popen(argv: list[str], cwd: Path, env: dict[str, str], setup) -> subprocess.Popen:
        try:
            return subprocess.Popen(
                argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                start_new_session=True, preexec_fn=setup, close_fds=True,  # noqa: PLW1509 - no locks taken in it
            )
        except subprocess.SubprocessError as error:  # preexec failed (cgroup gone, setuid refused): cannot start
            raise OSError(f"cannot set up the job's process: {error}") from error

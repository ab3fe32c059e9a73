"""A started stage attempt (Running): its output pumped as it comes, its timeout and cancel enforced, its whole
process group (and cgroup) killed when it ends, and its exit reported once with the reason it ended."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from adapters.adoption import JobFiles, Orphan
from adapters.build_plan import BUILD
from adapters.cgroups import Cgroup, size_text
from adapters.hooks import pre_hook_failure
from adapters.listening import group_members, listening_ports
from adapters.runspec import RunSpec, exit_code_of, format_seconds
from adapters.runtime.images import Pulled
from adapters.transfer_plan import REASON_FILE, TRANSFER_KINDS

OnOutput = Callable[[str, bytes], None]
OnExit = Callable[[int, str], None]
CHUNK = 64 * 1024
POLL = 0.05
PROBE = 0.25  # seconds of quiet after which the output pipes are read to see whether they ended (`pump`)
SIGNALS = {s.value: s.name for s in signal.Signals}


class Running:
    """One started process group: streams its output, enforces its timeout, can be canceled."""

    def __init__(self, spec: RunSpec, proc: subprocess.Popen | Orphan, workdir: Path, grace: float,
                 cgroup: Cgroup | None = None, ran_on_host: bool = False, *, files: JobFiles,
                 started_at: float | None = None):
        self.spec, self.proc, self.workdir, self.ran_on_host = spec, proc, workdir, ran_on_host
        self.grace, self.cgroup, self.files = grace, cgroup, files
        self.started_at = time.time() if started_at is None else started_at
        self.devices: list[str] = []  # the GPU indices it was bound to
        self.readers: dict[str, int] = {}  # the agent's ends of its output FIFOs, until its readers take them
        self.pulled: Pulled | None = None  # the image this ran in (oci runtime), with how long its pull took
        self.image_note = ""  # how its image got ready: "image X ready in 1.2 s (pulled)" (oci, apptainer)
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

    def listening_ports(self, addresses: frozenset[str]) -> tuple[int, ...]:
        """The TCP ports its processes alone listen on at `addresses` in the node's network (adapters/listening.py)."""
        members = self.cgroup.pids() if self.cgroup is not None else group_members(self.proc.pid)
        return listening_ports({self.proc.pid, *members}, addresses)

    def release(self) -> None:
        """Forget the job's state on disk: call once its end is reported (or will never be)."""
        self.files.remove()

    def _signal(self, signum: int) -> None:
        """The process group, and in a cgroup every process of the job (a daemon left the group)."""
        _kill_group(self.proc.pid, signum)
        if self.cgroup is not None:
            self.cgroup.signal(signum)

    def _supervise(self, readers: list[threading.Thread], on_exit: OnExit) -> None:
        """Wait for exit (enforcing timeout and cancel), kill what is left, drain the pipes, then report once."""
        timeout = self.spec.execute_timeout_seconds
        ran = max(0.0, time.time() - self.started_at)  # an adopted job has run for a while already
        deadline, timed_out = None, ""
        if timeout and timeout > 0:
            deadline, timed_out = time.monotonic() + timeout - ran, f"execute timeout of {format_seconds(timeout)} reached"
        exited = _exit_watch(self.proc)
        try:
            while self.proc.poll() is None and not self._stop.is_set():
                if deadline is not None and time.monotonic() >= deadline:
                    self.cancel(timed_out)
                    break
                exited(self._stop, POLL)
        finally:
            exited.close()
        if self._stop.is_set() and not self._wait_for_exit(self.grace):
            self._signal(signal.SIGKILL)
            self.proc.wait()
        try:
            # stragglers would hold the pipes open and outlive the allocation; in a cgroup its kill takes every member
            # (its sweeps read the members until none is left: they are read once more at all, not three times)
            emptied = False
            if self.cgroup is None:
                self._signal(signal.SIGKILL)
            else:
                _kill_group(self.proc.pid)
                emptied = self.cgroup.kill()
            for reader in readers:
                reader.join()
            self.result = (exit_code_of(self._returncode()), self._exit_reason())
            if self.cgroup is not None:
                self.cgroup.remove(emptied)
            on_exit(*self.result)
        finally:
            self._done.set()

    def _wait_for_exit(self, seconds: float) -> bool:
        try:
            self.proc.wait(timeout=seconds)
            return True
        except subprocess.TimeoutExpired:
            return False

    def _returncode(self) -> int:
        """The status of a process known to have ended (`_supervise` reads it only after waiting for that)."""
        code = self.proc.returncode
        assert code is not None, "the process has ended"
        return code

    def _exit_reason(self) -> str:
        code = self._returncode()
        if self._reason is not None:
            return self._reason
        if code != 0 and (failure := pre_hook_failure(self.workdir)) is not None:
            return failure
        if code != 0 and self.cgroup is not None and self.cgroup.limits.memory and self.cgroup.oom_kills():
            return f"out of memory: killed at its memory limit of {size_text(self.cgroup.limits.memory)}"
        if getattr(self.proc, "status_lost", False):
            return "ended while no agent watched it, and its exit status was not recorded"
        if code != 0 and self.spec.kind in TRANSFER_KINDS and (told := _told_reason(self.workdir)):
            return told
        if self.spec.kind == BUILD and (told := _told_reason(self.workdir)):  # built, cached, or why not
            return told
        if code < 0:
            return f"killed by signal {signal.Signals(-code).name}"
        if code - 128 in SIGNALS:  # the wrapper's shell reports a job killed by signal N as 128+N
            return f"killed by signal {SIGNALS[code - 128]}"
        return f"exited with code {code}"


class _exit_watch:
    """Waits up to a poll interval for the process to exit: on its pidfd, so a short job's end is seen at once (not
    at the next poll); an adopted job (not our child) or a kernel without pidfds waits on the stop event instead."""

    def __init__(self, proc: subprocess.Popen | Orphan) -> None:
        self.fd = -1
        if isinstance(proc, subprocess.Popen):
            try:
                self.fd = os.pidfd_open(proc.pid)
            except (AttributeError, OSError):  # Linux before 5.3, or the process is already reaped
                self.fd = -1

    def __call__(self, stop: threading.Event, seconds: float) -> None:
        if self.fd < 0:
            stop.wait(seconds)
        else:
            select.select([self.fd], [], [], seconds)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _kill_group(pid: int, signum: int = signal.SIGKILL) -> None:
    try:
        os.killpg(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _told_reason(workdir: Path) -> str:
    """What a transfer said about its failure (the URI and the cause, never a secret), at most one line."""
    try:
        return (workdir / REASON_FILE).read_text()[:1000].strip().splitlines()[0]
    except (OSError, IndexError, UnicodeDecodeError):
        return ""


def pump(readers: dict[str, int], on_output: OnOutput) -> None:
    """Forward the job's pipes' bytes as they arrive (not line-buffered), each closed at its end: one thread reads
    both streams (a thread each cost the agent 60 us of CPU a job to start and end).

    A FIFO whose writers all opened before its reader (an adopted job's) never reports their hang-up to poll: after
    a quiet PROBE each pipe is read anyway, without blocking, and one no process writes to any more reads as its end."""
    streams = {fd: stream for stream, fd in readers.items()}
    ready = select.poll()  # not select(): an agent running many jobs holds descriptors past FD_SETSIZE
    for fd in streams:
        os.set_blocking(fd, False)
        ready.register(fd, select.POLLIN)
    try:
        while streams:
            woken = [fd for fd, _ in ready.poll(PROBE * 1000)] or list(streams)
            for fd in woken:
                try:
                    chunk = os.read(fd, CHUNK)
                except BlockingIOError:  # a writer is there, with nothing to say yet
                    continue
                if chunk:
                    on_output(streams[fd], chunk)
                else:
                    ready.unregister(fd)
                    del streams[fd]
                    os.close(fd)
    finally:
        for fd in streams:
            os.close(fd)

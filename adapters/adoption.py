"""What of a running job survives its agent: a directory per allocation, so the next agent can adopt the job.

`<state>/<allocation>-e<epoch>/` holds `state.json` (the RunSpec, the wrapper's pid and kernel start time, the
cgroup, the work directory, the devices), the `stdout` and `stderr` FIFOs the job writes to, and `exit`, where
the job's shell wrapper writes its exit code. The job holds its FIFOs open read-write, so it never gets SIGPIPE
while no agent reads: its output waits in the pipe (the job blocks once the pipe's buffer is full) until the
next agent opens the FIFO by its path. The agent is the wrapper's parent only until it dies: an adopted job's
end is seen by polling its pid (with its start time, so a recycled pid is never taken for it), and its exit code
is read from the file. The job never sees these paths, only the descriptors; the directory is the agent's (0700).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import msgspec

from adapters.known_files import remove_known
from adapters.private_files import write_new_private, write_private
from adapters.probes import with_kebab_probes
from adapters.runspec import RunSpec, upcast_kept
from domain.agent_protocol import Register

# The job's parent: it waits for the job and writes its exit code to fd 0 (the `exit` file), so the code is
# known even when no agent is its parent any more. A trapped TERM does not end it (the job gets TERM and its
# grace period); the trap is reset to the default in the job by exec.
WRAPPER = 'trap : TERM; "$@" </dev/null; code=$?; echo "$code" >&0; exit "$code"'
UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")
STREAMS = ("stdout", "stderr")
OWN_FILES = (*STREAMS, "exit", "state.json")  # what every job's directory holds
POLL = 0.05


class JobState(msgspec.Struct, kw_only=True):
    """Everything the next agent needs to watch a job it did not start."""

    spec: RunSpec
    workdir: str
    pid: int
    born: int | None  # the wrapper's start time in clock ticks since boot
    started_at: float  # wall clock: an adopted job's execute timeout still counts from its start
    cgroup_version: int = 0
    cgroup_dirs: dict[str, str] = {}
    limits: dict[str, Any] = {}
    ran_on_host: bool = False
    devices: list[str] = []
    image_digest: str = ""  # held in the node's image cache while the job runs


def wrapped(argv: list[str]) -> list[str]:
    return ["/bin/sh", "-c", WRAPPER, "roving-job", *argv]


def start_time(pid: int) -> tuple[str, int] | None:
    """(state letter, start time in clock ticks) of a process (/proc/PID/stat), None if it is gone. Read raw (one
    read: the line is a few hundred bytes): half of what `Path.read_text` costs, at every start and every poll of an
    adopted job."""
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
        try:
            line = os.read(fd, 4096)
        finally:
            os.close(fd)
        fields = line.rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0].decode(), int(fields[19])


def alive(pid: int, born: int | None) -> bool:
    """Still the process we started, and not a zombie (an init that does not reap keeps those listed)."""
    found = start_time(pid)
    return found is not None and found[0] != "Z" and (born is None or found[1] == born)


class JobFiles:
    """One allocation's directory of state, FIFOs and exit file."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    @classmethod
    def for_spec(cls, root: Path, spec: RunSpec) -> JobFiles:
        return cls(Path(root) / f"{UNSAFE.sub('_', spec.allocation_id)}-e{spec.epoch}")

    def create(self) -> None:
        self.directory.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.remove()  # what an attempt that never started left
        self.directory.mkdir(mode=0o700)
        for stream in STREAMS:
            os.mkfifo(self.directory / stream, 0o600)

    def open_readers(self) -> dict[str, int]:
        """The agent's read ends, blocking; a FIFO no job writes to any more reads as EOF at once."""
        readers = {}
        for stream in STREAMS:
            fd = os.open(self.directory / stream, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
            readers[stream] = fd
        return readers

    def open_writers(self) -> dict[str, int]:
        """The job's ends: read-write, so the pipe keeps a reader while no agent has it open."""
        return {stream: os.open(self.directory / stream, os.O_RDWR | os.O_CLOEXEC) for stream in STREAMS}

    def open_exit(self) -> int:
        return os.open(self.directory / "exit", os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)

    def exit_code(self) -> int | None:
        try:
            fd = os.open(self.directory / "exit", os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            return None
        try:
            text = os.read(fd, 32).decode(errors="replace").strip()
        finally:
            os.close(fd)
        return int(text) if text.isdigit() else None

    def save(self, state: JobState) -> None:
        """Written once, into the directory `create` made for this start, the agent's alone (the spec's env may hold
        secrets): no temporary file and rename (half the cost), since one torn by a crash reads as none, as a
        missing one does (`found_jobs`)."""
        write_new_private(self.directory / "state.json", msgspec.json.encode(state))

    def load(self) -> JobState | None:
        try:
            state = msgspec.json.decode((self.directory / "state.json").read_bytes())
            return msgspec.convert({**state, "spec": with_kebab_probes(upcast_kept(state["spec"]))}, JobState)
        except (OSError, msgspec.DecodeError, msgspec.ValidationError, TypeError, KeyError):
            return None

    def remove(self) -> None:
        """The directory and what is in it: its own files by name (rmtree's walk cost twice as much: 0.66 ms a job
        here), anything else (a keeper's file) by walking it. Gone already, as before a job's start: one call."""
        remove_known(self.directory, OWN_FILES)


def found_jobs(root: Path) -> list[tuple[JobFiles, JobState]]:
    """Every job a previous agent recorded; directories without a readable state (it died starting) go."""
    root = Path(root)
    found = []
    for directory in sorted(root.iterdir()) if root.is_dir() else []:
        files = JobFiles(directory)
        state = files.load()
        if state is None:
            files.remove()
        else:
            found.append((files, state))
    return found


class Orphan:
    """The wrapper of an adopted job, as the supervisor sees a Popen: poll(), wait(), returncode."""

    def __init__(self, pid: int, born: int | None, files: JobFiles) -> None:
        self.pid, self.born, self.files = pid, born, files
        self.returncode: int | None = None
        self.status_lost = False  # the wrapper ended without writing a code (it was killed)

    def poll(self) -> int | None:
        if self.returncode is None and not alive(self.pid, self.born):
            code = self.files.exit_code()
            self.status_lost = code is None
            self.returncode = 255 if code is None else code
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        started = time.monotonic()
        while (code := self.poll()) is None:
            if timeout is not None and time.monotonic() - started >= timeout:
                raise subprocess.TimeoutExpired("roving-job", timeout)
            time.sleep(POLL)
        return code


class Registration:
    """The node id and epoch this agent last registered with, and a digest of what it registered (`node.json`):
    what a restarted agent resumes, so long as it would register the same node again."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def save(self, node_id: str, epoch: int, registered: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        _write_private(self.path, msgspec.json.encode({"node_id": node_id, "epoch": epoch, "registered": registered}))

    def load(self) -> tuple[str, int, str] | None:
        """(node id, epoch, digest); a file from before digests were kept has an empty one."""
        try:
            found = msgspec.json.decode(self.path.read_bytes())
            return str(found["node_id"]), int(found["epoch"]), str(found.get("registered") or "")
        except (OSError, msgspec.DecodeError, KeyError, TypeError, ValueError, AttributeError):
            return None


def registration_digest(body: Register) -> str:
    """What a registration says of the node (capacity, devices, labels, addresses), as one comparable string: of
    the mapping agents before the protocol's types sent (no `segment` when there is none), so an unchanged node
    still resumes its registration across the upgrade."""
    shape = msgspec.to_builtins(body)
    if not shape.get("segment"):
        del shape["segment"]
    return hashlib.sha256(msgspec.json.encode(shape, order="sorted")).hexdigest()


def _write_private(path: Path, data: bytes) -> None:
    """Whole or not at all (a temporary name, then a rename), readable by the agent only."""
    write_private(path, data, durable=False)  # a registration is rewritten in place

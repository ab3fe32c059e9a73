"""Each allocation in a cgroup of its own (v2 or v1, detected): its request's limits, killed whole at its end.

The layout is `<hierarchy>/roving/<agent>/<allocation>-e<epoch>`: `<agent>` is stable across restarts of one
agent (it names the agent's work directory), so a restarted agent finds and kills what its predecessor left.
On cgroup v1 (the hybrid layout of these machines) one directory per controller is kept; v2 needs the unified
hierarchy to offer the memory and pids controllers, otherwise v1 is used.
"""

from __future__ import annotations

import errno
import os
import re
import signal
import time
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
V1_REQUIRED = ("memory", "pids")
V1_OPTIONAL = ("cpu", "freezer", "devices")
V2_CONTROLLERS = ("memory", "pids", "cpu")
CPU_PERIOD_US = 100_000
KILL_ROUNDS = 200  # each round re-reads the members: a process forking while it is killed is caught next round
UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")


@dataclass(frozen=True)
class Limits:
    """What one allocation may use; None means unlimited."""

    memory: int | None = None
    cpus: float | None = None
    pids: int | None = None
    denied_devices: tuple[tuple[int, int], ...] = ()  # (major, minor) of char devices the job must not open


def size_text(size: int) -> str:
    """67108864 -> '64MiB': the shape of exit reasons naming a memory limit."""
    for unit, factor in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= factor and size % factor == 0:
            return f"{size // factor}{unit}"
    return f"{size}B"


def _write(path: Path, value: str) -> None:
    """One write (cgroup files take one write each; no temp file, no truncation games), without a Python file object
    around it: 8 us against 14 us here, and a job's cgroup takes five or more."""
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC)  # (as open(path, "w") opened it)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def _members(procs: Path) -> list[int]:
    """The pids in a `cgroup.procs` (read raw: half of what `Path.read_text` costs, and a job's end reads it)."""
    try:
        fd = os.open(procs, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return []
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    except OSError:
        return []
    finally:
        os.close(fd)
    return [int(pid) for pid in b"".join(chunks).split()]


def _counter(path: Path, key: str) -> int:
    """`key N` from a flat-keyed cgroup file (memory.events, memory.oom_control); 0 when absent."""
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


class Cgroup:
    """One allocation's cgroup: `dirs` maps each controller to its directory (v2: the single key "")."""

    def __init__(self, version: int, dirs: dict[str, Path], limits: Limits) -> None:
        self.version, self.dirs, self.limits = version, dirs, limits

    @property
    def _procs(self) -> Path:
        """The membership the kill sweeps read: the pids controller tracks every task, threads included."""
        return (self.dirs.get("pids") or self.dirs[""]) / "cgroup.procs"

    def join(self, pid: int) -> None:
        """Move `pid` into every controller's directory; run in the child before exec so descendants inherit."""
        for directory in self.dirs.values():
            _write(directory / "cgroup.procs", str(pid))

    def pids(self) -> list[int]:
        return _members(self._procs)

    def signal(self, signum: int) -> None:
        for pid in self.pids():
            try:
                os.kill(pid, signum)
            except (ProcessLookupError, PermissionError):
                pass

    def kill(self) -> bool:
        """SIGKILL every member until none is left (cgroup.kill on v2; frozen sweeps on v1); False when some were
        still there after every round."""
        if self.version == 2 and (self.dirs[""] / "cgroup.kill").exists():
            _write(self.dirs[""] / "cgroup.kill", "1")
        freezer = self.dirs.get("freezer")
        for _ in range(KILL_ROUNDS):
            if not self.pids():
                return True
            if freezer is not None:
                _write(freezer / "freezer.state", "FROZEN")  # no fork slips between the listing and the kill
            self.signal(signal.SIGKILL)
            if freezer is not None:
                _write(freezer / "freezer.state", "THAWED")  # a frozen task cannot act on its SIGKILL
            time.sleep(0.005)
        return False

    def oom_kills(self) -> int:
        """How many processes the kernel killed for reaching the memory limit."""
        if self.version == 2:
            return _counter(self.dirs[""] / "memory.events", "oom_kill")
        memory = self.dirs["memory"]
        kills = _counter(memory / "memory.oom_control", "oom_kill")  # kernels since 4.13 count them
        if kills or not (memory / "memory.failcnt").exists():
            return kills
        limit = self.limits.memory  # older kernels: reaching the limit is the best evidence there is
        return int(bool(limit and int((memory / "memory.max_usage_in_bytes").read_text()) >= limit))

    def remove(self, emptied: bool = False) -> None:
        """Kill what is left and delete the directories (a dying task can keep one busy for a moment). `emptied`: a
        `kill` just found no member left, and none can join an empty cgroup but by an admin's hand: not read again."""
        if not emptied:
            self.kill()
        for directory in self.dirs.values():
            for _ in range(100):
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as error:
                    if error.errno != errno.EBUSY:
                        raise
                    time.sleep(0.01)


class Hierarchy:
    """Where this agent's allocation cgroups live, and how to make one with limits."""

    def __init__(self, version: int, bases: dict[str, Path], agent: str) -> None:
        self.version, self.bases, self.agent = version, bases, UNSAFE.sub("_", agent)

    def describe(self) -> str:
        return f"cgroup-v{self.version}"

    def _parents(self) -> dict[str, Path]:
        return {name: base / "roving" / self.agent for name, base in self.bases.items()}

    def prepare(self) -> None:
        """Create the parents; on v2, enable the controllers down to the allocations' level."""
        for name, parent in self._parents().items():
            parent.mkdir(parents=True, exist_ok=True)
            if self.version == 2:
                wanted = " ".join(f"+{c}" for c in V2_CONTROLLERS if c in (self.bases[name] / "cgroup.controllers")
                                  .read_text().split())
                for level in (self.bases[name], parent.parent, parent):
                    _write(level / "cgroup.subtree_control", wanted)

    def create(self, name: str, limits: Limits) -> Cgroup:
        """A fresh cgroup for one allocation with its limits written before any process joins it."""
        dirs = {controller: parent / UNSAFE.sub("_", name) for controller, parent in self._parents().items()}
        for directory in dirs.values():
            directory.mkdir(exist_ok=True)
        cgroup = Cgroup(self.version, dirs, limits)
        try:
            (self._limit_v2 if self.version == 2 else self._limit_v1)(dirs, limits)
        except OSError:
            cgroup.remove()
            raise
        return cgroup

    @staticmethod
    def _limit_v2(dirs: dict[str, Path], limits: Limits) -> None:
        directory = dirs[""]
        if limits.memory:
            _write(directory / "memory.max", str(limits.memory))
            if (directory / "memory.swap.max").exists():
                _write(directory / "memory.swap.max", "0")  # swap would let a job outgrow its request unseen
        if limits.cpus and (directory / "cpu.max").exists():
            _write(directory / "cpu.max", f"{int(limits.cpus * CPU_PERIOD_US)} {CPU_PERIOD_US}")
        if limits.pids:
            _write(directory / "pids.max", str(limits.pids))

    @staticmethod
    def _limit_v1(dirs: dict[str, Path], limits: Limits) -> None:
        if limits.memory:
            _write(dirs["memory"] / "memory.limit_in_bytes", str(limits.memory))
            if (dirs["memory"] / "memory.memsw.limit_in_bytes").exists():  # after the plain limit: never below it
                _write(dirs["memory"] / "memory.memsw.limit_in_bytes", str(limits.memory))
        if limits.cpus and "cpu" in dirs:
            _write(dirs["cpu"] / "cpu.cfs_period_us", str(CPU_PERIOD_US))
            _write(dirs["cpu"] / "cpu.cfs_quota_us", str(int(limits.cpus * CPU_PERIOD_US)))
        if limits.pids:
            _write(dirs["pids"] / "pids.max", str(limits.pids))
        for major, minor in limits.denied_devices if "devices" in dirs else ():
            _write(dirs["devices"] / "devices.deny", f"c {major}:{minor} rwm")

    def close(self) -> None:
        """Remove this agent's own parent once it is empty; one still holding allocations stays for the next."""
        for parent in self._parents().values():
            try:
                parent.rmdir()
            except OSError:
                pass

    def reap(self, keep: AbstractSet[str] = frozenset()) -> list[str]:
        """Kill and remove every allocation cgroup a previous agent of this name left, but those of the jobs it
        adopts (`keep`: their directory names); returns the names removed."""
        parents = self._parents()
        names = sorted({child.name for parent in parents.values() if parent.is_dir()
                        for child in parent.iterdir() if child.is_dir()} - set(keep))
        for name in names:
            dirs = {controller: parent / name for controller, parent in parents.items() if (parent / name).is_dir()}
            Cgroup(self.version, dirs, Limits()).remove()
        return names


def detect(agent: str, root: Path = ROOT, euid: int | None = None) -> tuple[Hierarchy | None, str]:
    """The hierarchy to use, or None and why not (not root, nothing mounted, controllers missing)."""
    if (os.geteuid() if euid is None else euid) != 0:
        return None, "the agent is not root: jobs run without cgroup limits"
    for unified in (root, root / "unified"):
        controllers = unified / "cgroup.controllers"
        if controllers.exists() and {"memory", "pids"} <= set(controllers.read_text().split()):
            return _prepared(Hierarchy(2, {"": unified}, agent))
    bases = {name: root / name for name in (*V1_REQUIRED, *V1_OPTIONAL) if (root / name / "cgroup.procs").exists()}
    if all(name in bases for name in V1_REQUIRED):
        return _prepared(Hierarchy(1, bases, agent))
    return None, f"no cgroup v2 with the memory and pids controllers and no v1 memory and pids under {root}"


def _prepared(hierarchy: Hierarchy) -> tuple[Hierarchy | None, str]:
    try:
        hierarchy.prepare()
    except OSError as error:
        return None, f"{hierarchy.describe()} is mounted but not writable: {error}"
    return hierarchy, hierarchy.describe()

"""How a job's process starts without forking the agent: a few lines of shell, exec'd by vfork, join the allocation's
cgroup, set its memlock limit and become the job's user (`setpriv`), then exec the job's wrapper.

Python code run in the child (`preexec_fn`) makes CPython fork the whole agent, page tables and all, holding the
GIL meanwhile: 0.92 ms of the agent's CPU per start of an 80 MB process here, against 0.13 ms with vfork, and a
fifth of an agent's CPU under load (ops/bench/profile.py). The shell keeps the order the preexec kept: into the
cgroup first (every descendant is born in it), the limit next (raising it needs root), the user last, for good.
Without `setpriv` (util-linux) a job that must change user is started the old way.
"""

from __future__ import annotations

import functools
import os
import resource
import shutil
from typing import Any

from adapters.runspec import JobUser
from domain.quantities import human_bytes

CAP_SYS_RESOURCE = 24  # linux/capability.h
SAFE_PATH = "/usr/bin:/bin:/usr/sbin:/sbin"  # never the job's PATH: this shell runs as root
SETPRIV = shutil.which("setpriv", path=SAFE_PATH)
SCRIPT = (
    'IFS=" "; procs=$1; memlock=$2; become=$3; shift 3; '
    'for f in $procs; do echo $$ >"$f" || { echo "roving: cannot join the allocation cgroup ($f)" >&2; exit 126; }; '
    'done; '
    '[ -z "$memlock" ] || ulimit $memlock 2>/dev/null || '
    'echo "roving: the memlock limit (ulimit $memlock KiB) could not be set" >&2; '
    '[ -z "$become" ] || exec @SETPRIV@ $become -- "$@"; '
    'exec "$@"'
)


def launcher(cgroup: Any, memory: int | None, user: JobUser | None) -> list[str] | None:
    """The argv that sets the job up before `argv` runs (prepend it), [] when nothing needs setting up, or None when
    only a preexec can (a user change without setpriv)."""
    if cgroup is None and not memory and user is None:
        return []
    if user is not None and SETPRIV is None:
        return None
    procs = " ".join(str(directory / "cgroup.procs") for directory in cgroup.dirs.values()) if cgroup else ""
    become = _become(user) if user is not None else ""
    return ["/bin/sh", "-c", SCRIPT.replace("@SETPRIV@", SETPRIV or "setpriv"), "roving-launch", procs, _memlock(memory),
            become]


def _become(user: JobUser) -> str:
    groups = f"--groups={','.join(map(str, user.groups))}" if user.groups else "--clear-groups"
    return f"--reuid={user.uid} --regid={user.gid} {groups}"


@functools.cache
def raises_limits(status: str = "/proc/self/status") -> bool:
    """Whether this process may raise a hard rlimit: root with CAP_SYS_RESOURCE. Root without it (a container, a
    microVM) is refused like any user, and a `ulimit -l` of the request would fail every job's start line."""
    if os.geteuid() != 0:
        return False
    try:
        with open(status) as found:
            effective = next(line for line in found if line.startswith("CapEff:"))
    except (OSError, StopIteration):
        return True  # no /proc: assume what root usually has
    return bool(int(effective.split()[1], 16) >> CAP_SYS_RESOURCE & 1)


def memlock_note(memory: int | None) -> str | None:
    """What the stage is told when its memlock limit will not be its memory request (None: it will be): without
    root, or without CAP_SYS_RESOURCE, a hard limit below the request caps it."""
    if not memory or raises_limits():
        return None
    _, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    if hard == resource.RLIM_INFINITY or hard >= memory:
        return None
    return (f"memlock limit is {human_bytes(hard)}, not the memory request of {human_bytes(memory)}: the agent runs "
            f"without root or CAP_SYS_RESOURCE and its hard RLIMIT_MEMLOCK is lower (RDMA and GPU pinned memory may fail)")


def _memlock(memory: int | None) -> str:
    """`ulimit` flags for RLIMIT_MEMLOCK = the memory request (KiB): soft and hard as root, else only the soft limit,
    capped by the hard one (as adapters.runspec.limit_memlock does)."""
    if not memory:
        return ""
    kib = -(-memory // 1024)
    _, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    if raises_limits() or hard == resource.RLIM_INFINITY:
        return f"-l {kib}"
    return f"-S -l {min(kib, hard // 1024)}"

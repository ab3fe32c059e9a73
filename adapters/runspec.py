"""What one stage attempt is: the RunSpec the control plane sends, whom it runs as, its env and paths."""

from __future__ import annotations

import os
import resource
from pathlib import Path
from typing import Any

import msgspec

from domain.agent_start import Start
from domain.multinode import HOSTFILE, environment

PASSED_THROUGH = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "USER", "LOGNAME", "TMPDIR")


RunSpec = Start  # the executor runs the `Start` the control plane sent, under the wire's names (domain/agent_start.py)

# A run spec kept on this node's disk by an agent before the executor ran the `Start` itself (before 2026-12-07)
# carried three under its own names (and `cpu_cores` as it is); adoption reads such a file through `upcast_kept`.
KEPT_NAMES = {"job_name": "job", "execute_timeout": "execute_timeout_seconds", "memory": "memory_bytes"}
ALWAYS_SENT: dict[str, Any] = {  # the wire's required fields at their empty values (`None` where it may be None)
    "job": "", "task_id": None, "kind": "job", "image": "", "script": None, "command": None, "args": None, "env": {},
    "cwd": None, "files": {}, "execute_timeout_seconds": None, "memory_bytes": 0, "cpu_cores": 0, "account_id": "",
    "readiness_probe": None, "ports": [], "mounts": {}}


def run_spec_of(start: Start, env: dict[str, str] | None = None) -> RunSpec:
    """What the executor runs of a run spec on the wire: the same `Start`, with `env` in place of its own (the
    agent's answer resolved its secret references, and took the registry's credential out)."""
    return start if env is None else msgspec.structs.replace(start, env=env)


def upcast_kept(spec: dict[str, Any]) -> dict[str, Any]:
    """A kept run spec (as builtins) in the `Start` shape, whichever an agent wrote it in: an older one's renamed
    fields get their wire names, and what the wire always sends but it left out gets its empty value."""
    if "job" in spec:
        return spec
    return with_always_sent({KEPT_NAMES.get(key, key): value for key, value in spec.items()})


def with_always_sent(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec with what the wire always sends at its empty value where it has none."""
    return {**spec, **{key: empty for key, empty in ALWAYS_SENT.items() if spec.get(key) is None}}


def local_spec(allocation_id: str, epoch: int, workflow_id: str, stage: str, **fields: Any) -> RunSpec:
    """A run spec made on this node (benchmarks, tests): what the wire always sends, at its empty values. A field
    the wire does not have is refused (an old name, `memory` for `memory_bytes`, would otherwise vanish unseen)."""
    unknown = sorted(set(fields) - set(Start.__struct_fields__))
    if unknown:
        raise TypeError(f"not fields of a run spec: {', '.join(unknown)} (the wire's names: domain.agent_start.Start)")
    return msgspec.convert(with_always_sent({"allocation_id": allocation_id, "epoch": epoch,
                                             "workflow_id": workflow_id, "stage": stage, **fields}), Start)


class JobUser(msgspec.Struct, frozen=True):
    """The POSIX identity a job runs as when the agent is root."""

    uid: int
    gid: int
    name: str
    groups: tuple[int, ...] = ()  # supplementary groups


def unreachable(path: Path, user: JobUser) -> str | None:
    """Why `user` could not get to `path` (a directory on the way it may not search), or None."""
    for parent in reversed([path, *Path(path).absolute().parents]):
        try:
            info = parent.stat()
        except FileNotFoundError:
            return None  # created later by the agent, searchable by everyone
        if info.st_uid == user.uid:
            allowed = info.st_mode & 0o100
        elif info.st_gid == user.gid:
            allowed = info.st_mode & 0o010
        else:
            allowed = info.st_mode & 0o001
        if not allowed:
            return f"{parent} is mode {info.st_mode & 0o777:04o}, owned by uid {info.st_uid}"
    return None


class SpecError(ValueError):
    """A RunSpec this node cannot run as given (no command, a path escaping the work directory)."""


def user_for(spec: RunSpec, fallback: JobUser | None, allow_root: bool = False) -> JobUser | None:
    """Whom a job runs as: its owner's uid and gids when the agent is root (`fallback` is then the agent's
    ROVING_JOB_UID, kept for work that carries no uid); None, the agent's own user, when the agent is not root."""
    if fallback is None or spec.uid is None:
        return fallback
    gid = spec.uid if spec.gid is None else spec.gid
    if 0 in (spec.uid, gid, *(spec.groups or ())) and not allow_root:
        raise SpecError("the job's owner has uid or gid 0 (root) and this agent refuses root jobs "
                        "(--allow-root-jobs allows them)")
    return JobUser(uid=spec.uid, gid=gid, name=spec.username or str(spec.uid), groups=tuple(spec.groups or ()))


def format_seconds(seconds: float) -> str:
    """30.0 -> '30s', 0.5 -> '0.5s': the shape used in exit reasons."""
    return f"{seconds:g}s"


def exit_code_of(returncode: int) -> int:
    """Shell convention: a process killed by signal N exits 128+N."""
    return 128 - returncode if returncode < 0 else returncode


def inside(base: Path, relative: str, what: str) -> Path:
    """`relative` resolved inside `base`; absolute paths are kept, `..` escapes are refused."""
    path = Path(relative)
    if path.is_absolute():
        return path
    resolved = (base / path).resolve()
    if resolved != base and base not in resolved.parents:
        raise SpecError(f"{what} {relative!r} leaves the stage's work directory")
    return resolved


def job_environment(spec: RunSpec, user: JobUser | None = None, home: Path | None = None,
                    devices: list[str] | None = None, workdir: Path | None = None) -> dict[str, str]:
    """A small inherited base (never the agent's own secrets), the stage's env, then the FB_* variables (a
    multinode rank's peers with its hostfile in `workdir`) and the devices this node bound the job to (a job
    asking for no GPU sees none)."""
    env = {key: os.environ[key] for key in PASSED_THROUGH if key in os.environ}
    if user is not None:  # not the agent's HOME and name: the job is someone else
        env.update(HOME=str(home), USER=user.name, LOGNAME=user.name)
    env.update(spec.env or {})
    env["FB_WORKFLOW_ID"] = spec.workflow_id
    env["FB_JOB_NAME"] = spec.job or spec.stage
    env["FB_ACCOUNT_ID"] = spec.account_id
    if spec.task_id is not None:
        env["FB_TASK_ID"] = str(spec.task_id)
    if spec.peers is not None:
        env.update(environment(spec.peers, str((workdir or home or Path(".")) / HOSTFILE)))
    if devices is not None:
        env["CUDA_VISIBLE_DEVICES"] = env["NVIDIA_VISIBLE_DEVICES"] = ",".join(devices)
    return env


def limit_memlock(requested: int) -> None:
    """RLIMIT_MEMLOCK = the memory request; without CAP_SYS_RESOURCE only the soft limit, capped by the hard one."""
    try:
        resource.setrlimit(resource.RLIMIT_MEMLOCK, (requested, requested))
    except (ValueError, OSError):
        _, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
        capped = requested if hard == resource.RLIM_INFINITY else min(requested, hard)
        resource.setrlimit(resource.RLIMIT_MEMLOCK, (capped, hard))

"""What one stage attempt is: the RunSpec the control plane sends, whom it runs as, its env and paths."""

from __future__ import annotations

import os
import resource
from pathlib import Path
from typing import Any

import msgspec

from adapters.hooks import HookSpec
from domain.fuzzfile.schema import Probe
from domain.multinode import HOSTFILE, Peers, environment

PASSED_THROUGH = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "USER", "LOGNAME", "TMPDIR")


class PersistentVolume(msgspec.Struct, frozen=True):
    """A persistent volume's directory on the node (the storage provisioner's), its owner's ids and mode."""

    path: str
    uid: int
    gid: int
    mode: int


class RunSpec(msgspec.Struct, kw_only=True):
    """What the control plane placed on this node: one stage attempt, as the assignments route sends it."""

    allocation_id: str
    epoch: int
    workflow_id: str
    stage: str
    owner_id: str = ""  # the workflow owner's user id (an agent that cannot confine jobs runs only its admin's)
    attempt: int = 1
    kind: str = "job"  # job | service | task | ingress | egress | build
    job_name: str = ""
    task_id: int | None = None
    account_id: str = ""
    user_id: str = ""
    script: str | None = None
    command: list[str] | str | None = None
    args: list[str] | None = None
    env: dict[str, str] | None = None
    cwd: str | None = None
    files: dict[str, str] | None = None
    execute_timeout: float | None = None
    memory: int | None = None
    cpu_cores: float | None = None
    image: str | None = None
    devices: dict[str, int] = {}  # requested counts by name, e.g. {"nvidia.com/gpu": 1}
    network_isolated: bool = False  # a private network namespace under the oci runtime
    readiness_probe: Probe | None = None
    liveness_probe: Probe | None = None  # a service failing it failure_threshold times in a row is killed
    ports: list[Any] = []  # echoed back in the ready report as the API sent them
    hooks: list[HookSpec] = []  # the profile's and the job's own pre and post hooks, in the order they run
    profile: str = ""
    start_delay_seconds: float = 0.0  # a restarted service's backoff: it sleeps this long before it starts
    mounts: dict[str, str] = {}  # path in the job -> volume name (the workflow's volume on this node)
    volume: str = ""  # an ingress or egress stage: the volume it moves files into or out of
    transfers: list[dict[str, str]] = []  # an ingress or egress stage: {source, destination} URIs
    build: dict[str, Any] | None = None  # a build stage: the image's build plan (domain.fuzzfile.images.BuildPlan)
    image_owner: str = ""  # a build, or a job in a fuzzball:// image: whose (user id) the built image is
    image_group: str = ""  # ... and the group whose members share a `scope: group` image
    persistent: dict[str, PersistentVolume] = {}  # volume name -> where a persistent volume lives (else ephemeral)
    peers: Peers | None = None  # a multinode job: this node's rank and every rank's address
    uid: int | None = None  # its owner's POSIX ids (a root agent runs it as them); None: submitted before ids
    gid: int | None = None
    groups: list[int] = []  # supplementary: the gids of its owner's groups
    username: str = ""


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
    if 0 in (spec.uid, gid, *spec.groups) and not allow_root:
        raise SpecError("the job's owner has uid or gid 0 (root) and this agent refuses root jobs "
                        "(--allow-root-jobs allows them)")
    return JobUser(uid=spec.uid, gid=gid, name=spec.username or str(spec.uid), groups=tuple(spec.groups))


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
    env["FB_JOB_NAME"] = spec.job_name or spec.stage
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

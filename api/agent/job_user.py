"""Whom a root agent runs jobs as when their owner has no POSIX ids: ROVING_JOB_UID and ROVING_JOB_GID, by name or
number (nobody/nogroup by default), never root unless allowed; an agent that is not root runs them as itself."""

from __future__ import annotations

import grp
import pwd
from collections.abc import Mapping
from pathlib import Path

from adapters.executor import JobUser, unreachable
from api.usage import UsageError


def _account(text: str, kind: str) -> tuple[int, str]:
    """A user or group given by name or number -> (id, name); numbers need no entry on this machine."""
    try:
        if kind == "user":
            entry = pwd.getpwnam(text)
            return entry.pw_uid, entry.pw_name
        group = grp.getgrnam(text)
        return group.gr_gid, group.gr_name
    except KeyError:
        if text.isdigit():
            return int(text), text
        raise UsageError(f"ROVING_JOB_{'UID' if kind == 'user' else 'GID'}: no {kind} {text!r} on this machine") from None


def job_user(env: Mapping[str, str], allow_root: bool, euid: int, workdir: Path) -> JobUser | None:
    """Whom jobs run as: an agent that is not root runs them as itself; root runs them as ROVING_JOB_UID/GID
    (nobody/nogroup by default), never as uid 0 unless --allow-root-jobs."""
    if euid != 0:
        return None
    uid, name = _account(env.get("ROVING_JOB_UID", "nobody"), "user")
    default_group = "nogroup" if "ROVING_JOB_GID" not in env and _has_group("nogroup") else str(_primary_gid(uid))
    gid, _ = _account(env.get("ROVING_JOB_GID", default_group), "group")
    if uid == 0 and not allow_root:
        raise UsageError("ROVING_JOB_UID is root: jobs would run as uid 0; pass --allow-root-jobs to allow it")
    user = JobUser(uid=uid, gid=gid, name=name)
    if (blocked := unreachable(workdir, user)) is not None:
        raise UsageError(f"argument --workdir: jobs run as {name} (uid {uid}) and cannot reach {workdir}: {blocked}")
    return user


def _has_group(name: str) -> bool:
    try:
        grp.getgrnam(name)
        return True
    except KeyError:
        return False


def _primary_gid(uid: int) -> int:
    try:
        return pwd.getpwuid(uid).pw_gid
    except KeyError:
        return uid

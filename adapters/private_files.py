"""Files only their owner may read (0600): written whole under a name of their own, or made once and never replaced.

Several processes write these at once (`ROVING_API_WORKERS` > 1 each start the whole control plane on one data
dir), so a temporary file is never a fixed name: two writers sharing `x.tmp` replace each other's half-written
file, and the second rename finds nothing and fails. Each writer gets its own temporary file in the target's
directory (a rename across filesystems is not atomic), filled, flushed to disk, then renamed over the target.

Keys are different: a key written twice is two keys, and whatever one process sealed or signed with the key it
made no longer opens once the other's replaced it. `create_private` makes such a file once (a hard link of a
complete temporary file: the name appears whole or not at all) and tells the caller whether it was first; every
later caller reads what the first wrote.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_private(path: Path, data: bytes | str, dir_mode: int | None = None, durable: bool = True) -> None:
    """Replace `path` atomically with `data`, mode 0600 from its first byte; `dir_mode` makes missing parents.
    `durable=False` skips the flush to disk (state a crash may lose, written on a hot path)."""
    path = Path(path)
    if dir_mode is not None:
        path.parent.mkdir(parents=True, exist_ok=True, mode=dir_mode)
    tmp = _filled(path, data, durable)
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def create_private(path: Path, data: bytes | str, dir_mode: int | None = None) -> bool:
    """Make `path` with `data` (0600) unless it exists; True when this call made it. Never replaces a file."""
    path = Path(path)
    if dir_mode is not None:
        path.parent.mkdir(parents=True, exist_ok=True, mode=dir_mode)
    if path.exists():
        return False
    tmp = _filled(path, data)
    try:
        os.link(tmp, path)  # fails if the name exists: the first writer wins, whole
        return True
    except FileExistsError:
        return False
    finally:
        tmp.unlink(missing_ok=True)


def write_new_private(path: Path, data: bytes) -> None:
    """Make `path` (0600) holding `data`, in one go: no temporary file and rename (half the cost), for a file written
    once into a directory of its own, where one torn by a crash must read as none. FileExistsError if it is there."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)


def _write_all(fd: int, raw: bytes) -> None:
    view = memoryview(raw)
    while view:
        view = view[os.write(fd, view):]


def _filled(path: Path, data: bytes | str, durable: bool = True) -> Path:
    """A temporary file of this process's own beside `path`, holding `data`, on disk."""
    raw = data.encode() if isinstance(data, str) else data
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)  # 0600 from the start
    try:
        os.fchmod(fd, 0o600)  # mkstemp's mode already is; a umask can only take bits, never add them
        _write_all(fd, raw)
        if durable:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(name)
        raise
    os.close(fd)
    return Path(name)

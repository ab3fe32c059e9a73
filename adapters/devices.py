"""The node's GPUs and which allocation holds which: the scheduler counts them, the agent picks the indices.

The inventory comes from a declaration (`--gpus 0,1` or ROVING_DECLARED_GPUS, for nodes whose drivers are not
visible and for tests), else `nvidia-smi`, else the `/dev/nvidia<N>` nodes. A GPU whose device node exists is
also fenced off in the devices cgroup of every allocation not bound to it (cgroup v1; v2 has no file for it).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

GPU = "nvidia.com/gpu"
NVIDIA_NODE = re.compile(r"nvidia([0-9]+)")


@dataclass(frozen=True)
class Gpu:
    index: str
    number: tuple[int, int] | None = None  # (major, minor) of its device node, when there is one


class DeviceError(ValueError):
    """More devices asked for than are free here: the scheduler and this node disagree."""


def parse_declared(text: str) -> list[str]:
    """`0,1` -> ['0', '1']; `2` alone means two GPUs, 0 and 1."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    if len(items) == 1 and "," not in text and items[0].isdigit():
        return [str(i) for i in range(int(items[0]))]
    if not all(item.isdigit() for item in items) or len(set(items)) != len(items):
        raise ValueError(f"{text!r} is not a list of distinct GPU indices, e.g. 0,1")
    return items


def inventory(declared: list[str] | None = None, dev: Path = Path("/dev"), smi: str = "nvidia-smi") -> list[Gpu]:
    """The GPUs of this node, in index order: the declared indices, else those the machine shows."""
    if declared is not None:
        indices = list(declared)
    elif shutil.which(smi):
        indices = _smi_indices(smi)
    else:
        indices = sorted((m.group(1) for p in _entries(dev) if (m := NVIDIA_NODE.fullmatch(p))), key=int)
    return [Gpu(index, _number(dev / f"nvidia{index}")) for index in indices]


def _entries(dev: Path) -> list[str]:
    try:
        return os.listdir(dev)
    except OSError:
        return []


def _smi_indices(smi: str) -> list[str]:
    try:
        out = subprocess.run([smi, "--query-gpu=index", "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=20, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in out.splitlines() if line.strip().isdigit()]


def _number(path: Path) -> tuple[int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return (os.major(info.st_rdev), os.minor(info.st_rdev)) if stat.S_ISCHR(info.st_mode) else None


class DeviceBinder:
    """Which allocation holds which GPU; the lowest free indices are given first."""

    def __init__(self, gpus: list[Gpu]) -> None:
        self.gpus = {gpu.index: gpu for gpu in gpus}
        self.bound: dict[str, list[str]] = {}
        self.lock = threading.Lock()  # jobs start off the agent's loop and end in supervisor threads

    def free(self) -> list[str]:
        with self.lock:
            taken = {index for held in self.bound.values() for index in held}
            return [index for index in self.gpus if index not in taken]

    def bind(self, holder: str, count: int) -> list[str]:
        with self.lock:
            taken = {index for held in self.bound.values() for index in held}
            free = [index for index in self.gpus if index not in taken]
            if count > len(free):
                raise DeviceError(f"{count} {GPU} asked for, {len(free)} of {len(self.gpus)} free on this node")
            self.bound[holder] = free[:count]
            return list(self.bound[holder])

    def hold(self, holder: str, indices: list[str]) -> None:
        """An adopted job keeps the GPUs its first agent gave it."""
        with self.lock:
            self.bound[holder] = [index for index in indices if index in self.gpus]

    def release(self, holder: str) -> None:
        with self.lock:
            self.bound.pop(holder, None)

    def denied(self, given: list[str]) -> list[tuple[int, int]]:
        """Device numbers of the GPUs a job bound to `given` must not open."""
        return [gpu.number for gpu in self.gpus.values() if gpu.index not in given and gpu.number is not None]

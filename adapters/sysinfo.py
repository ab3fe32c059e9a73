"""What this machine really has (cpus, memory, devices) and the error counters it exposes cheaply."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

NVIDIA_DEVICE = re.compile(r"nvidia[0-9]+")


@dataclass(frozen=True)
class Capacity:
    """Schedulable capacity as the node registers it."""

    cpu: int
    memory: int
    devices: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ErrorCounters:
    """Hardware error totals since boot; zero where the kernel exposes nothing."""

    disk_errors: int = 0
    memory_errors: int = 0


def cpu_count() -> int:
    """CPUs this process may run on (affinity-aware), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def memory_total(meminfo: Path = Path("/proc/meminfo")) -> int:
    """MemTotal in bytes, 0 when /proc/meminfo is unreadable."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemTotal:"):
                parts = line.split()
                return int(parts[1]) * (1024 if parts[-1].lower() == "kb" else 1)
    except (OSError, ValueError, IndexError):
        pass
    return 0


def devices(dev: Path = Path("/dev")) -> dict[str, int]:
    """Visible accelerators: each `/dev/nvidia<N>` is one `nvidia.com/gpu`."""
    try:
        count = sum(1 for entry in dev.iterdir() if NVIDIA_DEVICE.fullmatch(entry.name))
    except OSError:
        count = 0
    return {"nvidia.com/gpu": count} if count else {}


def capacity(meminfo: Path = Path("/proc/meminfo"), dev: Path = Path("/dev")) -> Capacity:
    return Capacity(cpu=cpu_count(), memory=memory_total(meminfo), devices=devices(dev))


FULL_BELOW = 16 * 2**20  # free bytes under which the log store's disk counts as full (readiness, the supervisor)


def free_bytes(path: Path) -> int | None:
    """Bytes an unprivileged writer may still use on `path`'s filesystem (None if it cannot be told)."""
    try:
        found = os.statvfs(path)
    except OSError:
        return None
    return found.f_bavail * found.f_frsize


def _sum_counters(paths: list[Path], base: int = 10) -> int:
    total = 0
    for path in paths:
        try:
            total += int(path.read_text().strip(), base)
        except (OSError, ValueError):
            continue
    return total


def error_counters(sys_root: Path = Path("/sys")) -> ErrorCounters:
    """SCSI `ioerr_cnt` of every block device and EDAC corrected + uncorrected memory errors."""
    disk = _sum_counters(sorted(sys_root.glob("block/*/device/ioerr_cnt")), base=16)
    edac = sorted(sys_root.glob("devices/system/edac/mc/mc*/ce_count"))
    edac += sorted(sys_root.glob("devices/system/edac/mc/mc*/ue_count"))
    return ErrorCounters(disk_errors=disk, memory_errors=_sum_counters(edac))

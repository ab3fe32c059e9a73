"""Project paths and quotas as values: path rules, ancestors, a subtree test, and quota parsing (no aggregate, no I/O).

Kept apart from the Project aggregate so the CLI (presets, `--project`) checks a path without the server's packages.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from domain.quantities import QuantityError, parse_memory

SEGMENT = r"[a-z0-9][a-z0-9_.-]{0,62}"
PATH = re.compile(rf"^{SEGMENT}(/{SEGMENT}){{0,7}}$")
MAX_QUOTA = 2**53  # a quota figure stays exact in JSON numbers and in sums of charges
PERMISSIONS = ("project:view", "workflow:view", "workflow:stop", "allocation:explain")


class ProjectError(ValueError):
    """A project command refused; `field` names what was wrong and `reason` says why."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field, self.reason = field, reason


def check_path(path: str) -> str:
    """A project path: 1 to 8 lowercase segments of letters, digits, `_ . -`, joined by `/`."""
    if not isinstance(path, str) or not PATH.match(path.strip("/")) or ".." in path:
        raise ProjectError("path", f"{path!r} is not a project path: 1 to 8 segments of lowercase letters, digits, "
                                   "_ . - (each starting with a letter or digit), joined by /, e.g. physics/lattice")
    return path.strip("/")


def ancestors(path: str) -> list[str]:
    """The project and every ancestor, root first: `a/b/c` -> `a`, `a/b`, `a/b/c`."""
    parts = path.split("/")
    return ["/".join(parts[: i + 1]) for i in range(len(parts))] if path else []


def parent_of(path: str) -> str:
    return path.rpartition("/")[0]


def within(path: str, scope: str) -> bool:
    """Is `path` the project `scope` or one of its descendants (a grant on `scope` covers it)?"""
    return path == scope or path.startswith(scope + "/")


def parse_quota(quota: Mapping[str, Any]) -> dict[str, int]:
    """`{cpu: 8, memory: "64GiB", devices: {gpu: 2}}` as limits by key (`cpu`, `memory`, `devices.gpu`);
    a key given as null has no limit. Memory is in bytes (a number) or a size with a unit."""
    if not isinstance(quota, Mapping):
        raise ProjectError("quota", f"expected {{cpu: N, memory: SIZE, devices: {{NAME: N}}}}, got {quota!r}")
    limits: dict[str, int] = {}
    for key, value in quota.items():
        if key == "devices":
            limits.update(_devices(value))
        elif key == "cpu":
            if value is not None:
                limits["cpu"] = _count("quota.cpu", value)
        elif key == "memory":
            if value is not None:
                limits["memory"] = _memory(value)
        else:
            raise ProjectError(f"quota.{key}", "unknown quota key; a quota limits cpu, memory and devices")
    return limits


def _devices(value: Any) -> dict[str, int]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ProjectError("quota.devices", f"expected {{NAME: COUNT}}, got {value!r}")
    found = {}
    for name, count in value.items():
        if not isinstance(name, str) or not name or len(name) > 128:
            raise ProjectError("quota.devices", f"{name!r} is not a device name")
        if count is not None:
            found[f"devices.{name}"] = _count(f"quota.devices.{name}", count)
    return found


def _count(field: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_QUOTA:
        raise ProjectError(field, f"expected a whole number from 0 to {MAX_QUOTA:,} (or null for no limit), got {value!r}")
    return value


def _memory(value: Any) -> int:
    try:
        size = parse_memory(value)
    except QuantityError as error:
        raise ProjectError("quota.memory", str(error)) from None
    return _count("quota.memory", size)


def quota_view(limits: Mapping[str, int]) -> dict[str, Any]:
    """Limits by key as the API shows a quota: `{cpu, memory, devices: {NAME: N}}` (absent: no limit)."""
    shown: dict[str, Any] = {k: v for k, v in limits.items() if not k.startswith("devices.")}
    devices = {k.removeprefix("devices."): v for k, v in limits.items() if k.startswith("devices.")}
    if devices:
        shown["devices"] = devices
    return shown

"""Best-effort upgrade of a legacy `version: v1` Fuzzfile to v4, with a warning for each construct it changed."""

from __future__ import annotations

import copy
from typing import Any

from domain.fuzzfile.decode import join
from domain.fuzzfile.schema import Problem


def upgrade_v1(document: dict[str, Any]) -> tuple[dict[str, Any], list[Problem]]:
    """A v4 copy of a v1 document and the warnings that say what changed and how to write it in v4."""
    upgraded = copy.deepcopy(document)
    warnings = [Problem("version", "version v1 is legacy; upgraded to v4 (set `version: v4` after applying the changes below)")]
    upgraded["version"] = "v4"
    for section in ("jobs", "services"):
        steps = upgraded.get(section)
        if isinstance(steps, dict):
            for name, step in steps.items():
                if isinstance(step, dict):
                    warnings += _upgrade_step(step, join(section, name))
    defaults = upgraded.get("defaults")
    if isinstance(defaults, dict) and isinstance(defaults.get("job"), dict):
        warnings += _upgrade_mounts(defaults["job"], "defaults.job")
    warnings += _drop_volume_names(upgraded.get("volumes"))
    return upgraded, warnings


def _upgrade_step(step: dict[str, Any], path: str) -> list[Problem]:
    warnings = _upgrade_mounts(step, path)
    requires = step.get("requires")
    if isinstance(requires, list) and all(isinstance(r, str) for r in requires):
        depends = step.setdefault("depends-on", [])
        if isinstance(depends, list):
            depends.extend({"name": name, "status": "FINISHED"} for name in requires)
            del step["requires"]
            warnings.append(
                Problem(join(path, "requires"), "v1 `requires` became `depends-on` entries with `status: FINISHED`")
            )
    return warnings


def _upgrade_mounts(step: dict[str, Any], path: str) -> list[Problem]:
    """v1 keys mounts by volume name with a `location`; v4 keys them by path with a `volume`."""
    mounts = step.get("mounts")
    if not isinstance(mounts, dict) or not all(_is_v1_mount(m) for m in mounts.values()):
        return []
    step["mounts"] = {m["location"]: {"volume": volume} for volume, m in mounts.items()}
    message = "v1 mounts (volume: {location: path}) became v4 mounts (path: {volume: name})"
    return [Problem(join(path, "mounts"), message)]


def _is_v1_mount(mount: Any) -> bool:
    return isinstance(mount, dict) and set(mount) == {"location"} and isinstance(mount["location"], str)


def _drop_volume_names(volumes: Any) -> list[Problem]:
    if not isinstance(volumes, dict):
        return []
    warnings = []
    for key, volume in volumes.items():
        if isinstance(volume, dict) and "name" in volume:
            del volume["name"]
            warnings.append(Problem(join(join("volumes", key), "name"), "v1 volume `name` dropped: v4 names a volume by its key"))
    return warnings

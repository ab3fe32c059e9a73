"""Admin-deployed presets: `*.yaml` files in one directory on the control plane, served read-only.

Read on each request (they are few and small), so an admin deploys or changes one by writing a file; a file that
is not a valid preset is reported with its reason instead of being served.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from domain.presets import MAX_PRESET_BYTES, Preset, PresetError, parse_preset


def load_presets(directory: Path | None) -> tuple[list[Preset], dict[str, str]]:
    """The valid presets by name order, and for every file that is not one, why."""
    if directory is None or not directory.is_dir():
        return [], {}
    found: list[Preset] = []
    broken: dict[str, str] = {}
    for path in sorted(directory.glob("*.yaml")):
        try:
            found.append(read_preset(path))
        except PresetError as error:
            broken[path.name] = str(error)
    return found, broken


def read_preset(path: Path) -> Preset:
    """One preset file (its name is the file's stem); PresetError names what is wrong."""
    try:
        if path.stat().st_size > MAX_PRESET_BYTES:
            raise PresetError("", f"a preset file is at most {MAX_PRESET_BYTES // 1024} KiB")
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise PresetError("", f"cannot read {path.name}: {error}") from None
    except yaml.YAMLError as error:
        raise PresetError("", f"not valid YAML: {str(error).splitlines()[0]}") from None
    return parse_preset(path.stem, document)

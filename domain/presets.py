"""Presets: named sets of `workflow start` options, expanded on the client, and the digest that names their content.

A preset is a small YAML document:

    description: GPU training in the lattice project
    options:
      project: physics/lattice
      priority: -10
      preemptible: true
      annotations: {team: lattice}

Users keep their own under the XDG config dir; admins deploy shared ones on the server, which serves them read-only.
`workflow start --preset NAME` takes the preset's options under whatever the command line says itself, and records
the preset's name and digest in the workflow's annotations, so `preset report` finds the work a preset started and
tells whether it was started from the preset's current content.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

import msgspec

from domain.project_paths import ProjectError, check_path

NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
OPTIONS = ("project", "priority", "preemptible", "strategy", "annotations")
STRATEGIES = ("ready", "start")
PRESET_ANNOTATION, DIGEST_ANNOTATION = "roving.preset", "roving.preset-digest"
MAX_PRESET_BYTES = 64 * 1024


class PresetError(ValueError):
    """A preset that cannot be used: `field` names the part, `reason` says why."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field, self.reason = field, reason


class Preset(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    description: str = ""
    options: dict[str, Any] = {}

    @property
    def digest(self) -> str:
        """sha256 of the options in canonical JSON: what the preset does to a workflow, whatever its layout."""
        canonical = json.dumps(self.options, sort_keys=True, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()

    def annotations(self) -> dict[str, str]:
        """What a workflow started from it records: the preset's name and its digest."""
        return {PRESET_ANNOTATION: self.name, DIGEST_ANNOTATION: self.digest}

    def document(self) -> dict[str, Any]:
        """The YAML document as it is written to a file (the name is the file's)."""
        found: dict[str, Any] = {"description": self.description} if self.description else {}
        return {**found, "options": dict(self.options)}


def check_name(name: str) -> str:
    if not isinstance(name, str) or not NAME.match(name):
        raise PresetError("name", f"{name!r} is not a preset name: lowercase letters, digits, _ . - (at most 64), "
                                  "starting with a letter or digit")
    return name


def parse_preset(name: str, document: Any) -> Preset:
    """A preset from its parsed YAML document; PresetError names the first thing wrong."""
    check_name(name)
    if not isinstance(document, Mapping):
        raise PresetError("", "a preset is a mapping with `options` (and an optional `description`)")
    unknown = sorted(set(document) - {"description", "options", "name"})
    if unknown:
        raise PresetError(unknown[0], "unknown key; a preset has `description` and `options`")
    description = document.get("description") or ""
    if not isinstance(description, str) or len(description) > 1000:
        raise PresetError("description", "a description is text of at most 1000 characters")
    options = document.get("options") or {}
    if not isinstance(options, Mapping):
        raise PresetError("options", f"expected a mapping of {', '.join(OPTIONS)}")
    return Preset(name=name, description=description, options={k: _option(k, v) for k, v in options.items()})


def _option(key: str, value: Any) -> Any:
    where = f"options.{key}"
    if key == "project":
        try:
            return check_path(value)
        except ProjectError as error:
            raise PresetError(where, error.reason) from None
    if key == "priority":
        if isinstance(value, bool) or not isinstance(value, int) or value > 0:
            raise PresetError(where, f"a workflow's priority is a whole number of 0 or lower, got {value!r}")
        return value
    if key == "preemptible":
        if not isinstance(value, bool):
            raise PresetError(where, f"expected true or false, got {value!r}")
        return value
    if key == "strategy":
        if value not in STRATEGIES:
            raise PresetError(where, f"expected one of {', '.join(STRATEGIES)}, got {value!r}")
        return value
    if key == "annotations":
        if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            raise PresetError(where, "expected a mapping of text to text")
        if any(k.startswith("roving.preset") for k in value):
            raise PresetError(where, "roving.preset* annotations are written by the client itself")
        return dict(value)
    raise PresetError(where, f"unknown option; a preset sets {', '.join(OPTIONS)}")


def expand(preset: Preset, given: Mapping[str, Any]) -> dict[str, Any]:
    """The options a start uses: the preset's, under those given on the command line (None: not given)."""
    merged = dict(preset.options)
    merged.update({k: v for k, v in given.items() if v is not None})
    annotations = {**preset.options.get("annotations", {}), **(given.get("annotations") or {}),
                   **preset.annotations()}
    merged["annotations"] = annotations
    return merged

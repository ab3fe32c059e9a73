"""What `roving run` submits: its `--volume` specs read, and the one-job Fuzzfile built from its arguments.

    --volume [KEY=][REF:]MOUNT[,size=SIZE][,ANNOTATION=VALUE...]

A bare MOUNT (`/scratch`) is an ephemeral volume, removed when the workflow ends; a bare REF (`data:/data`) names
the caller's persistent volume `volume://user/persistent/data`; a full reference (`volume://group/persistent/x:/x`)
is used as written. KEY names the volume in the Fuzzfile (default: from the reference, else the mount path).
`size` and annotations are read and checked, but this cluster's volumes have neither a size limit nor
annotations: they are kept off the Fuzzfile and the caller is warned.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

import msgspec

from domain.fuzzfile.volume_refs import PREFIX, Reference, parse_reference
from domain.quantities import QuantityError, parse_memory

KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
STAGE = "run"
STDIN_FILE = ".roving-stdin"
MAX_STDIN = 256 * 1024  # it travels in the Fuzzfile, which is stored in one event


class RunUsage(ValueError):
    """A `roving run` argument that cannot be used; the message names the flag."""


class VolumeSpec(msgspec.Struct, frozen=True):
    key: str
    reference: str
    mount: str
    size: int | None = None
    annotations: dict[str, str] = {}


def parse_volume(text: str) -> VolumeSpec:
    """One `--volume` value; RunUsage saying what is wrong with it."""
    head, *options = text.split(",")
    key = ""
    name, equals, rest = head.partition("=")
    if equals and KEY.match(name) and "/" not in name and ":" not in name:
        key, head = name, rest
    ref, colon, mount = head.rpartition(":")
    if not colon:
        ref, mount = "", head
    if not mount.startswith("/") or mount == "/" or ".." in mount.split("/"):
        raise RunUsage(f"--volume {text!r}: the mount path must be absolute, below /, without `..` (e.g. /data)")
    reference = _reference(text, ref)
    size, annotations = _options(text, options)
    return VolumeSpec(key or _default_key(reference, mount), reference, mount.rstrip("/"), size, annotations)


def _reference(text: str, ref: str) -> str:
    if not ref:
        return "volume://user/ephemeral"
    if not ref.startswith(PREFIX):
        if not KEY.match(ref):
            raise RunUsage(f"--volume {text!r}: {ref!r} is neither a volume name nor a volume:// reference")
        ref = f"volume://user/persistent/{ref}"
    parsed = parse_reference(ref)
    if not isinstance(parsed, Reference):
        raise RunUsage(f"--volume {text!r}: {parsed}")
    return ref


def _options(text: str, options: list[str]) -> tuple[int | None, dict[str, str]]:
    size, annotations = None, {}
    for option in options:
        name, equals, value = option.partition("=")
        if not equals or not name or not value:
            raise RunUsage(f"--volume {text!r}: {option!r} is not NAME=VALUE (size=10GiB, or an annotation)")
        if name == "size":
            try:
                size = parse_memory(value)
            except QuantityError as error:
                raise RunUsage(f"--volume {text!r}: size: {error}") from None
            if size <= 0:
                raise RunUsage(f"--volume {text!r}: size must be more than zero")
        else:
            annotations[name] = value
    return size, annotations


def _default_key(reference: str, mount: str) -> str:
    name = reference.rstrip("/").rsplit("/", 1)[-1] if not reference.endswith("/ephemeral") else ""
    base = name or mount.strip("/").replace("/", "-")
    return re.sub(r"[^A-Za-z0-9_.-]", "-", base).strip("-.")[:63] or "volume"


def unique(volumes: list[VolumeSpec]) -> list[VolumeSpec]:
    """Volumes with distinct keys (a repeated default key gets -2, -3...) and distinct mount paths (else RunUsage)."""
    mounts: set[str] = set()
    keys: set[str] = set()
    out = []
    for volume in volumes:
        if volume.mount in mounts:
            raise RunUsage(f"--volume: two volumes are mounted at {volume.mount}")
        mounts.add(volume.mount)
        key, number = volume.key, 2
        while key in keys:
            key, number = f"{volume.key}-{number}", number + 1
        keys.add(key)
        out.append(msgspec.structs.replace(volume, key=key))
    return out


def definition(command: list[str], image: str, volumes: list[VolumeSpec], env: list[str], cpus: int,
               memory: str | None, stdin: str | None) -> dict[str, Any]:
    """The one-job Fuzzfile (v4); with `stdin`, the command reads it from a file written beside it."""
    job: dict[str, Any] = {"image": {"uri": image}, "resource": {"cpu": {"cores": cpus}}}
    if memory:
        job["resource"]["memory"] = {"size": memory}
    if stdin is None:
        job["command"] = command
    else:
        job["files"] = {STDIN_FILE: stdin}
        job["script"] = f"#!/bin/sh\nexec {shlex.join(command)} < {STDIN_FILE}\n"
    if env:
        job["env"] = env
    if volumes:
        job["mounts"] = {v.mount: {"volume": v.key} for v in volumes}
    found: dict[str, Any] = {"version": "v4", "jobs": {STAGE: job}}
    if volumes:
        found["volumes"] = {v.key: {"reference": v.reference} for v in volumes}
    return found

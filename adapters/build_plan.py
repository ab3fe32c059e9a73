"""A `build:NAME` stage as the node runs it: a child process (`python -m adapters.image_build PLAN`) that the
executor starts, logs, times and reports like any job. It runs as the agent (it writes the node's image cache
and confines the post script itself) and reaches the object store with the agent's NATS credentials, handed
to it in its environment, never in the plan file."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import msgspec

from adapters.image_build import URL_ENV
from adapters.runspec import RunSpec, SpecError
from adapters.runtime.bwrap import OciRuntime
from domain.fuzzfile.images import BUILD

__all__ = ["BUILD", "PLAN_FILE", "URL_ENV", "build_argv", "build_env"]

PLAN_FILE = ".roving-build.json"
CODE_ROOT = Path(__file__).resolve().parent.parent  # the builder is the agent's own code, whatever is installed


def build_env(url: str | None) -> dict[str, str]:
    """What the builder needs beyond a job's environment: the object store's URL and the agent's own code."""
    return {"PYTHONPATH": str(CODE_ROOT), **({URL_ENV: url} if url else {})}


def build_argv(spec: RunSpec, workdir: Path, runtime: object, reason_file: Path) -> list[str]:
    """Writes the plan (the recipe, whose image it is, the node's image cache) and returns the command."""
    if not isinstance(runtime, OciRuntime):  # the host runtime, or apptainer: nothing confines a post script
        raise SpecError(f"{spec.stage}: image builds need the oci runtime on the node (roving agent --runtime oci)")
    if not spec.build:
        raise SpecError(f"{spec.stage}: the control plane sent no build plan")
    plan = {"plan": msgspec.to_builtins(spec.build), "owner": spec.image_owner or "", "group": spec.image_group or "",
            "image_cache": str(runtime.cache.directory), "insecure": list(runtime.cache.insecure),
            "bwrap": runtime.bwrap, "reason_file": str(reason_file)}
    path = workdir / PLAN_FILE
    path.write_text(json.dumps(plan))
    return [sys.executable, "-m", "adapters.image_build", str(path)]

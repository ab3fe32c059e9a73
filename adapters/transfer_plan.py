"""An ingress or egress stage as the node runs it: a child process (`python -m adapters.transfer PLAN`) that the
executor starts, logs, times and reports like any job, run as the job's user on the node holding the volume."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from adapters.runspec import RunSpec
from domain.fuzzfile.transfers import TRANSFER_KINDS

__all__ = ["PLAN_FILE", "REASON_FILE", "TRANSFER_KINDS", "transfer_argv"]

PLAN_FILE = ".roving-transfer.json"
REASON_FILE = ".roving-reason"  # a failed transfer's one-line reason: the URI and the cause


def transfer_argv(spec: RunSpec, workdir: Path, bound: dict[str, Path]) -> list[str]:
    """Writes the plan (URIs and the volume's directory; secrets stay in the env) and returns the command."""
    plan = {"kind": spec.kind, "volume_dir": str(bound[""]), "transfers": spec.transfers,
            "reason_file": str(workdir / REASON_FILE)}
    path = workdir / PLAN_FILE
    path.write_text(json.dumps(plan))
    return [sys.executable, "-m", "adapters.transfer", str(path)]

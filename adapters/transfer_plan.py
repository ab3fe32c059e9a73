"""An ingress or egress stage as the node runs it: a child process (`python -m adapters.transfer PLAN`) that the
executor starts, logs, times and reports like any job, on the node holding the volume. It runs as the agent (our
code, whose interpreter the job user may not reach), so it resolves every path inside the volume (a symlink a job
left there cannot lead it out) and hands what it writes to the job user."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import msgspec

from adapters.runspec import JobUser, RunSpec
from domain.fuzzfile.transfers import TRANSFER_KINDS

__all__ = ["PLAN_FILE", "REASON_FILE", "TRANSFER_KINDS", "transfer_argv"]

PLAN_FILE = ".roving-transfer.json"
REASON_FILE = ".roving-reason"  # a failed transfer's one-line reason: the URI and the cause


def transfer_argv(spec: RunSpec, workdir: Path, bound: dict[str, Path], user: JobUser | None) -> list[str]:
    """Writes the plan (URIs, the volume's directory, whom written files belong to; secrets stay in the env) and
    returns the command."""
    plan = {"kind": spec.kind, "volume_dir": str(bound[""]), "transfers": msgspec.to_builtins(spec.transfers),
            "reason_file": str(workdir / REASON_FILE), "owner": [user.uid, user.gid] if user is not None else None}
    path = workdir / PLAN_FILE
    path.write_text(json.dumps(plan))
    return [sys.executable, "-m", "adapters.transfer", str(path)]

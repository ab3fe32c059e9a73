"""The `command` volume provisioner: an admin's program makes a storage class's volumes (a Lustre directory, a cloud
volume mounted on the nodes), JSON in and out, as the node provisioners' `command` provider does.

The program gets one JSON object on stdin: `{"action": "create", "provisioner", "request", "class", "reference",
"scope", "name", "organization" (its id, `_` for none), "uid", "gid", "mode", "root", "attempt"}` and prints one
JSON object as its last line: `{"path": "<the volume's directory on the nodes>"}`, under `root`, made with the
owner's ids and mode.
It must be idempotent by `request`: asked again (a restart, a retry, the same volume asked by a later workflow
after a failure) it answers the directory it made before. Any other exit is a failure; `{"error": "<reason>"}`
on stdout is the reason the waiting workflows are given. Its stderr may hold what only an admin should see
(credentials, hosts), so it goes to the control plane's log and never to users. The program runs in a session of
its own and is killed whole at the definition's `timeoutSeconds`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from dataclasses import dataclass
from typing import Any

import structlog

from domain.storage_provisioner import Volume
from domain.storage_provisioner_spec import StorageSpec, path_problem

log = structlog.get_logger("roving.volume_provisioner")
MAX_OUTPUT = 64 * 1024
REASON_MOST = 500
STDERR_TAIL = 2000


@dataclass(frozen=True)
class Outcome:
    """What the program answered: the directory, or the reason users are shown."""

    path: str = ""
    reason: str = ""


def provision(name: str, spec: StorageSpec, volume: Volume) -> Outcome:
    """Run the program for one volume request; never raises for anything the program did."""
    message = {"action": "create", "provisioner": name, "request": volume.request, "class": volume.storage_class,
               "reference": volume.reference, "scope": volume.scope, "name": volume.name,
               "organization": volume.organization or "_", "uid": volume.uid, "gid": volume.gid, "mode": volume.mode,
               "root": spec.root, "attempt": volume.attempts}
    try:
        process = subprocess.Popen([spec.program], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, start_new_session=True)
    except OSError as error:
        log.warning("volume_provisioner.cannot_run", provisioner=name, program=spec.program,
                    error=error.strerror or str(error))
        return Outcome(reason=f"volume provisioner {name}'s program cannot run (an admin sees why in the log)")
    try:
        out, err = process.communicate(json.dumps(message).encode(), timeout=spec.timeout_seconds)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        return Outcome(reason=f"volume provisioner {name}'s program ran past {spec.timeout_seconds:g}s and was killed")
    answer = _answer(out[:MAX_OUTPUT])
    if err.strip():
        log.info("volume_provisioner.stderr", provisioner=name, request=volume.request,
                 stderr=err.decode(errors="replace").strip()[-STDERR_TAIL:])
    if process.returncode != 0:
        said = answer.get("error")
        reason = str(said)[:REASON_MOST] if isinstance(said, str) and said else "(it gave no reason)"
        return Outcome(reason=f"its program exited {process.returncode}: {reason}")
    path = answer.get("path")
    if (problem := path_problem(path, spec.root)) is not None:
        return Outcome(reason=f"its program's answer is refused: {problem}")
    assert isinstance(path, str)
    return Outcome(path=path.rstrip("/"))


def _answer(out: bytes) -> dict[str, Any]:
    lines = out.decode(errors="replace").strip().splitlines()
    try:
        answer = json.loads(lines[-1]) if lines else {}
    except json.JSONDecodeError:
        return {}
    return answer if isinstance(answer, dict) else {}


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.communicate()

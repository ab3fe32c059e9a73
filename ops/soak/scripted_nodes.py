"""A `command` provider's program that makes nodes on this host, as a cloud would make machines: for the soak, the
e2e tests, and as a worked example of the protocol (docs/admin-guide.md, "Provisioners").

    python -m ops.soak.scripted_nodes STATE_DIR      (JSON on stdin: {"action": "create" | "delete", ...})

create starts `roving agent` in a session of its own (it outlives this program and the control plane, as a machine
would) and prints {"instance": "<pid>"}; asked again for the same request while that agent lives, it answers the
same instance. delete stops the agent and every process of its jobs, and removes its work directory.
Calls for one request are serialized by a lock file, so a create asked again while the first still runs (the
control plane restarted meanwhile) waits for it and answers with what it made: one machine per request. Each
machine started is one line in STATE_DIR/launches.log.
Faults, by files in STATE_DIR: `fail-creates` fails every create while it exists; `fail-first` fails each request's
first attempt (exit 1, a message on stderr, as a cloud out of capacity would); `delay-create` holds SECONDS: each
create takes that long (a slow cloud).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

STOP_GRACE = 10.0


def main(argv: list[str]) -> int:
    state = Path(argv[0]) if argv else Path(os.environ.get("ROVING_SCRIPTED_STATE", "scripted"))
    state.mkdir(parents=True, exist_ok=True)
    message = json.loads(sys.stdin.read())
    with open(state / f"{message['node']}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when this program ends, however it ends
        if message["action"] == "create":
            return create(state, message)
        delete(state, message)
    print("{}")
    return 0


def create(state: Path, message: dict[str, Any]) -> int:
    node, agent = message["node"], message["agent"]
    running = _pid(state, node)
    if running is not None:
        print(json.dumps({"instance": str(running)}))
        return 0
    if (state / "fail-creates").exists():
        print("no capacity: creates are failing (fail-creates)", file=sys.stderr)
        return 1
    marker = state / f"failed-once-{node}"
    if (state / "fail-first").exists() and not marker.exists():
        marker.touch()
        print(f"no capacity for {node} (fail-first: the next attempt succeeds)", file=sys.stderr)
        return 1
    delay = state / "delay-create"
    if delay.exists():
        time.sleep(float(delay.read_text() or 0))
    workdir = state / "work" / node
    workdir.mkdir(parents=True, exist_ok=True)
    argv = [*agent["command"], *agent["args"], "--token-file", agent["tokenFile"], "--workdir", str(workdir),
            "--address", "127.0.0.1"]
    log = Path(agent["tokenFile"]).parent / f"agent-{node}.log"
    with open(log, "ab") as output:
        process = subprocess.Popen(argv, stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True)
    (state / f"{node}.pid").write_text(str(process.pid))
    with open(state / "launches.log", "a") as launches:
        launches.write(f"{node} {process.pid} attempt {message['attempt']}\n")
    print(json.dumps({"instance": str(process.pid)}))
    return 0


def delete(state: Path, message: dict[str, Any]) -> None:
    node = message["node"]
    pid = _pid(state, node)
    if pid is not None:
        _stop(pid)
    workdir = (state / "work" / node).resolve()
    for other in _pids():
        if _cwd(other).startswith(str(workdir) + os.sep) or f"/roving/{node}-" in _cgroups(other):
            _kill(other, signal.SIGKILL)
    shutil.rmtree(workdir, ignore_errors=True)
    (state / f"{node}.pid").unlink(missing_ok=True)


def _pid(state: Path, node: str) -> int | None:
    """The node's agent while it lives (a pid file whose process names the node)."""
    try:
        pid = int((state / f"{node}.pid").read_text())
    except (OSError, ValueError):
        return None
    args = _cmdline(pid)
    return pid if "--node" in args and args[args.index("--node") + 1 :][:1] == [node] else None


def _stop(pid: int) -> None:
    _kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE
    while time.monotonic() < deadline and _cmdline(pid):
        time.sleep(0.1)
    _kill(pid, signal.SIGKILL)


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _cmdline(pid: int) -> list[str]:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, IndexError):
        return []
    return [] if state == "Z" else [p.decode(errors="replace") for p in raw.split(b"\0") if p]


def _cwd(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return ""


def _cgroups(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cgroup").read_text()
    except OSError:
        return ""


def _kill(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

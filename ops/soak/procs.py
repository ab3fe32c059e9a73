"""Finding and ending the processes of one soak stack by what ties them to its data dir (never by name)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def environ(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    pairs = (part.decode(errors="replace").partition("=") for part in raw.split(b"\0") if part)
    return {key: value for key, _, value in pairs}


def cwd(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return ""


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def all_pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def owned(data_dir: Path) -> list[int]:
    """Every live process whose command line, working directory or ROVING_DATA_DIR names this data dir (jobs,
    agents, nats)."""
    root, mine = str(data_dir), os.getpid()
    found = []
    for pid in all_pids():
        if pid == mine:
            continue
        named = any(root in part for part in cmdline(pid)) or cwd(pid).startswith(root)
        if (named or environ(pid).get("ROVING_DATA_DIR") == root) and alive(pid):
            found.append(pid)
    return found


def nats_pids(data_dir: Path) -> list[int]:
    conf = str(data_dir / "nats")
    return [pid for pid in owned(data_dir)
            if (args := cmdline(pid)) and args[0].endswith("nats-server") and any(conf in a for a in args)]


def agent_pids(data_dir: Path) -> dict[str, int]:
    """node name -> pid of each live agent `roving up` started on this data dir."""
    found = {}
    for pid in owned(data_dir):
        args = cmdline(pid)
        if "--node" in args and any("agent_main" in part for part in args):
            found[args[args.index("--node") + 1]] = pid
    return found


def kill(pid: int, sig: int = signal.SIGKILL) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def wait_gone(pids: list[int], timeout: float) -> list[int]:
    """The pids still alive after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    left = [p for p in pids if alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = [p for p in left if alive(p)]
    return left


def reap_all(data_dir: Path, grace: float = 5.0, spare=None) -> dict[int, str]:
    """TERM then KILL everything tied to the data dir but what `spare(pid)` keeps; returns what had to be ended
    (pid -> command line)."""
    pids = [pid for pid in owned(data_dir) if spare is None or not spare(pid)]
    found = {pid: " ".join(cmdline(pid))[:160] for pid in pids}
    for pid in pids:
        kill(pid, signal.SIGTERM)
    stubborn = wait_gone(pids, grace)
    for pid in stubborn:
        kill(pid)
    wait_gone(stubborn, 5)
    return found

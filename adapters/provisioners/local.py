"""The `local` provider: a node is a `roving agent` process on this host, started as the local pool's are.

Like the pool's agents (api.up.local_agents), a made one dies with the control plane that started it (a death
signal), so nothing outlives `roving up`. A control plane that takes the provisioner over (a restart, another API
worker) adopts what is recorded as made: an agent still running is kept, one that died with its predecessor is
started again under the same name and work directory, so the node rejoins instead of a second one being made.
Deleting a node stops its agent and everything its jobs left running (their cgroups, their work directory).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import structlog

from adapters import cgroups
from adapters.nats_owner import cmdline
from adapters.provisioners import AGENT_START, AgentLaunch, Order, ProviderError, agent_args

log = structlog.get_logger("roving.provisioner")
STOP_GRACE = 10.0


class LocalProvider:
    blocking = False  # a start is a fork: done on the runner's own thread, whose end the death signal follows

    def __init__(self, launch: AgentLaunch, settings: dict[str, Any], preexec: Any = None) -> None:
        self.launch, self.settings, self.preexec = launch, settings, preexec
        self.processes: dict[str, subprocess.Popen] = {}
        self.lock = threading.Lock()

    def create(self, order: Order) -> str:
        """Start the node's agent, or answer with the one already running for this request."""
        pid = self._running(order.node)
        if pid is None:
            pid = self._start(order)
        return f"local:{order.node}:{pid}"

    def adopt(self, order: Order) -> None:
        if self._running(order.node) is None:
            log.info("provisioner.local_restarted", node=order.node)
            self._start(order)

    def alive(self, order: Order) -> bool:
        return self._running(order.node) is not None

    def delete(self, order: Order) -> None:
        """Stop the agent, kill what its jobs left and remove its work directory; nothing left is success."""
        pids = self._agents(order.node)
        for pid in pids:
            _signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE
        while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
            self._reap()
            time.sleep(0.1)
        for pid in pids:
            _signal(pid, signal.SIGKILL)
        self._reap()
        workdir = self.workdir(order.node)
        self._kill_jobs(order.node, workdir)
        shutil.rmtree(workdir, ignore_errors=True)
        with self.lock:
            self.processes.pop(order.node, None)

    def stop(self) -> None:
        """The control plane stops: its agents stop their jobs and go (their nodes stay recorded as made, and the
        next control plane starts them again)."""
        with self.lock:
            running = [p for p in self.processes.values() if p.poll() is None]
        for process in running:
            process.terminate()
        for process in running:
            try:
                process.wait(STOP_GRACE)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def workdir(self, node: str) -> Path:
        return self.launch.work_root / node

    def _start(self, order: Order) -> int:
        workdir = self.workdir(order.node)
        workdir.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-c", AGENT_START, *agent_args(order, self.launch), "--token-file",
                str(self.launch.token_file), "--workdir", str(workdir), "--address", "127.0.0.1"]
        if self.settings.get("runtime"):
            argv += ["--runtime", str(self.settings["runtime"])]
        try:
            with open(self.launch.log_dir / f"agent-{order.node}.log", "ab") as output:
                process = subprocess.Popen(argv, stdout=output, stderr=subprocess.STDOUT, preexec_fn=self.preexec)
        except OSError as error:
            raise ProviderError(f"cannot start the agent of {order.node}: {error}") from error
        with self.lock:
            self.processes[order.node] = process
        log.info("provisioner.local_started", node=order.node, pid=process.pid)
        return process.pid

    def _running(self, node: str) -> int | None:
        """Our own child when it lives (no scan of /proc); else one found by its command line."""
        with self.lock:
            ours = self.processes.get(node)
        if ours is not None and ours.poll() is None:
            return ours.pid
        found = self._agents(node)
        return found[0] if found else None

    def _agents(self, node: str) -> list[int]:
        """Live agents of this node: ours, and any another control plane on this host started with our token."""
        with self.lock:
            ours = self.processes.get(node)
        found = [ours.pid] if ours is not None and ours.poll() is None else []
        token = str(self.launch.token_file)
        for name in os.listdir("/proc"):
            if name.isdigit() and int(name) not in found and _is_agent(cmdline(int(name)), node, token):
                found.append(int(name))
        return [pid for pid in found if _alive(pid)]

    def _reap(self) -> None:
        with self.lock:
            for process in self.processes.values():
                process.poll()  # a dead child is collected, so it is not mistaken for a live one

    def _kill_jobs(self, node: str, workdir: Path) -> None:
        """A node's end is its jobs' end: its allocations' cgroups, then anything still working in its directory."""
        digest = hashlib.sha256(str(workdir.resolve()).encode()).hexdigest()[:8]  # api.agent.node.agent_name
        hierarchy, _ = cgroups.detect(f"{node}-{digest}")
        if hierarchy is not None:
            hierarchy.reap()
            hierarchy.close()
        root = str(workdir.resolve())
        for name in os.listdir("/proc"):
            if name.isdigit() and _cwd(int(name)).startswith(root + os.sep):
                _signal(int(name), signal.SIGKILL)


def _is_agent(argv: list[str], node: str, token: str) -> bool:
    return "--node" in argv and token in argv and argv[argv.index("--node") + 1 :][:1] == [node]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _cwd(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return ""


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass

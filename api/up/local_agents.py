"""The local pool's agents as `roving up` keeps them: started, watched, and started again when one dies.

The same keeper holds `roving up`'s API workers (api.up.workers), with `kind="worker"`.

An agent that exits while the stack runs (killed, crashed) is started again with the same command line; its
running jobs were left running and its successor adopts them. One that keeps dying is started again after a
growing pause (1 s doubling to 30 s), so a broken agent does not spin; the pause resets once one has lived a minute.

An agent still alive on a work directory when `roving up` starts (its crashed predecessor's, detaching: see
api.composition.stack) is waited for, and ended if it lingers, before a new one starts there: one agent a node.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from adapters.backoff import Backoff
from adapters.nats_owner import cmdline

log = structlog.get_logger("roving.stack")
FIRST_PAUSE, LONGEST_PAUSE, STEADY_SECONDS, CHECK_EVERY = 1.0, 30.0, 60.0, 0.5
PREDECESSOR_WAIT = 15.0  # an agent detaching takes its kill grace plus its stop margin at most (api/agent/main.py)


@dataclass
class Kept:
    name: str
    argv: list[str]
    log_path: Path | None  # None: the keeper's own output
    env: dict[str, str] | None = None  # None: the keeper's own environment
    process: subprocess.Popen | None = None
    started: float = 0.0
    backoff: Backoff = field(default_factory=lambda: Backoff(FIRST_PAUSE, LONGEST_PAUSE, STEADY_SECONDS))
    due: float = 0.0           # when a dead one may start again
    restarts: int = 0


class LocalAgents:
    def __init__(self, preexec: Callable[[], None] | None = None, check_every: float = CHECK_EVERY,
                 restart: bool = True, kind: str = "agent") -> None:
        self.kept: list[Kept] = []
        self.kind = kind
        self.preexec, self.check_every, self.restart = preexec, check_every, restart
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._watch, name="roving-local-agents", daemon=True)

    def add(self, name: str, argv: list[str], log_path: Path | None, env: dict[str, str] | None = None) -> None:
        kept = Kept(name, argv, log_path, env=env)
        with self.lock:
            self._start(kept)
            self.kept.append(kept)
        if self.restart and not self.thread.is_alive():
            self.thread.start()

    @property
    def processes(self) -> list[subprocess.Popen]:
        with self.lock:
            return [k.process for k in self.kept if k.process is not None]

    def stop(self, grace: float = 10.0, signum: int = signal.SIGTERM) -> None:
        """Stop them all with `signum` (an agent detaches on SIGUSR1: its jobs run on), killed after `grace` s."""
        self.stopping.set()
        with self.lock:
            running = [k.process for k in self.kept if k.process is not None and k.process.poll() is None]
        for process in running:
            process.send_signal(signum)
        for process in running:
            try:
                process.wait(grace)
            except subprocess.TimeoutExpired:
                process.kill()

    def _start(self, kept: Kept) -> None:
        if kept.log_path is None:
            kept.process = subprocess.Popen(kept.argv, env=kept.env, preexec_fn=self.preexec)
        else:
            with open(kept.log_path, "ab") as output:  # the child keeps its own copy of the descriptor
                kept.process = subprocess.Popen(kept.argv, stdout=output, stderr=subprocess.STDOUT,
                                                env=kept.env, preexec_fn=self.preexec)
        kept.started = time.monotonic()

    def _watch(self) -> None:
        while not self.stopping.wait(self.check_every):
            with self.lock:
                for kept in self.kept:
                    self._look_after(kept)

    def _look_after(self, kept: Kept) -> None:
        process, now = kept.process, time.monotonic()
        if process is None or process.poll() is None or self.stopping.is_set():
            return
        if not kept.due:
            lived = now - kept.started
            kept.due = now + kept.backoff.after_death(lived)
            log.warning(f"stack.{self.kind}_died", node=kept.name, exit_code=process.returncode, lived_s=round(lived, 1),
                        restart_in_s=round(kept.due - now, 1))
        if now >= kept.due:
            kept.due, kept.restarts = 0.0, kept.restarts + 1
            self._start(kept)
            log.info(f"stack.{self.kind}_restarted", node=kept.name, restarts=kept.restarts)


def agents_on(workdir: Path) -> list[int]:
    """Live `roving agent` processes (other than ours) working in `workdir`, from their command lines."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        argv = cmdline(int(name))
        if "--workdir" in argv[:-1] and argv[argv.index("--workdir") + 1] == str(workdir) and _is_agent(argv):
            found.append(int(name))
    return found


def _is_agent(argv: list[str]) -> bool:
    return any("agent_main" in part for part in argv) or (len(argv) > 1 and argv[1] == "agent")


def outlive_predecessors(workdir: Path, signum: int, wait: float = PREDECESSOR_WAIT) -> list[int]:
    """Ask the agents still on `workdir` to go with `signum` (a detach: their jobs run on for ours to adopt), wait
    for them, and SIGKILL those still there after `wait` s (the jobs are sessions of their own: they survive it).
    Returns the pids found."""
    found = agents_on(workdir)
    for pid in found:
        _signal(pid, signum)
    deadline = time.monotonic() + wait
    while (left := [pid for pid in found if cmdline(pid)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in left:
        _signal(pid, signal.SIGKILL)
    if found:
        log.warning("stack.agent_predecessors", workdir=str(workdir), pids=found, killed=left)
    return found


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass

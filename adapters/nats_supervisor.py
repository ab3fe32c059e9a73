"""Keeps the embedded nats-server alive: a dead server is started again on the same port and store.

The clients (nats-py) reconnect by themselves, so a restart on the same port is all they need. Restarts
back off from `first_delay` to `max_delay` while they keep failing (a port taken, a broken binary) and the
backoff resets once a server has stayed up for `steady_after` seconds, so a crash loop cannot spin.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import structlog

from adapters.nats_server import NatsServer, NatsServerError

log = structlog.get_logger("roving.nats")


class Supervisor:
    """One watching thread per embedded server; `on_restart` is called after each successful restart."""

    def __init__(self, server: NatsServer, on_restart: Callable[[], None] = lambda: None,
                 first_delay: float = 0.1, max_delay: float = 5.0, steady_after: float = 30.0,
                 poll: float = 0.1) -> None:
        self.server, self.on_restart = server, on_restart
        self.first_delay, self.max_delay, self.steady_after, self.poll = first_delay, max_delay, steady_after, poll
        self.restarts = 0
        self.down_since: float | None = None
        self._delay = first_delay
        self._up_since = time.monotonic()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="roving-nats-supervisor", daemon=True)

    def start(self) -> Supervisor:
        self._thread.start()
        return self

    @property
    def serving(self) -> bool:
        process = self.server.process
        return process is not None and process.poll() is None

    def _watch(self) -> None:
        # The server's death signal is tied to this thread (it starts the restarts): it must not end early.
        while not self._stopping.wait(self.poll):
            try:
                self._check()
            except Exception:  # noqa: BLE001 - a supervisor that dies would leave the server dead for good
                log.exception("nats.supervisor_failed")

    def _check(self) -> None:
        if self.serving:
            if self._delay != self.first_delay and time.monotonic() - self._up_since > self.steady_after:
                self._delay = self.first_delay
            return
        if self.down_since is None:
            self.down_since = time.monotonic()
            process = self.server.process
            log.warning("nats.server_died", pid=process.pid if process else None,
                        exit_code=process.returncode if process else None, port=self.server.port,
                        store=str(self.server.store_dir))
        if self._stopping.wait(self._delay):
            return
        self._restart()

    def _restart(self) -> None:
        delay, self._delay = self._delay, min(self._delay * 2, self.max_delay)
        try:
            self.server.start(cancelled=self._stopping.is_set)
        except NatsServerError as error:
            if self._stopping.is_set():  # cancelled by stop(): not a failure
                return
            log.error("nats.restart_failed", error=str(error), port=self.server.port, waited=delay,
                      next_in=self._delay)
            return
        down = time.monotonic() - (self.down_since or time.monotonic())
        self.down_since, self._up_since = None, time.monotonic()
        self.restarts += 1
        log.warning("nats.restarted", pid=self.server.process.pid, port=self.server.port,
                    down_seconds=round(down, 3), restarts=self.restarts)
        self.on_restart()

    def stop(self, timeout: float = 20.0) -> None:
        """Stop watching (a start under way is cancelled); the server itself is stopped by its owner."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

"""Keeps the embedded nats-server alive: a dead server is started again on the same port and store.

The clients (nats-py) reconnect by themselves, so a restart on the same port is all they need. Restarts back off
(adapters/backoff.py: from `first_delay` doubling to `max_delay`, back to short once a server stayed up for
`steady_after` seconds), so a crash loop cannot spin.

A full disk is the other way a server stops serving while it runs: its file store keeps the write error (every
store fails, with no answer to the publisher) after the disk has room again, until the server starts again. So
the supervisor watches the store's free space too: once it fell under `full_below` and is back over `room_above`,
the server is stopped and started again, and the log takes writes without anyone restarting `roving up`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import structlog

from adapters.backoff import Backoff
from adapters.batch_staging import BatchStaging
from adapters.nats_server import NatsServer, NatsServerError
from adapters.sysinfo import FULL_BELOW, free_bytes

log = structlog.get_logger("roving.nats")
ROOM_ABOVE = 64 * 2**20   # free bytes over which a disk that was full has room again
STOP_GRACE = 5.0          # a server with a full disk may hang flushing as it stops
TEND_EVERY = 1.0          # seconds between looks at the streams' batch staging (a new stream is linked within it)


class Supervisor:
    """One watching thread per embedded server; `on_restart` is called after each successful restart. With
    `staging`, its streams' atomic batches are kept staged in memory (adapters/batch_staging.py), again after
    every restart (the server unlinks them as it loads its streams)."""

    def __init__(self, server: NatsServer, on_restart: Callable[[], None] = lambda: None,
                 first_delay: float = 0.1, max_delay: float = 5.0, steady_after: float = 30.0,
                 poll: float = 0.1, full_below: int = FULL_BELOW, room_above: int = ROOM_ABOVE,
                 staging: BatchStaging | None = None) -> None:
        self.server, self.on_restart, self.poll = server, on_restart, poll
        self.staging, self._tended = staging, 0.0
        self.backoff = Backoff(first_delay, max_delay, steady_after)
        self.full_below, self.room_above = full_below, room_above
        self.disk_was_full = False
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
            self._watch_disk()
            self._tend()
            return
        if self.down_since is None:
            self.down_since = time.monotonic()
            self._delay = self.backoff.after_death(self.down_since - self._up_since)
            process = self.server.process
            log.warning("nats.server_died", pid=process.pid if process else None,
                        exit_code=process.returncode if process else None, port=self.server.port,
                        store=str(self.server.store_dir))
        if self._stopping.wait(self._delay):
            return
        self._restart()

    def _tend(self, now: bool = False) -> None:
        if self.staging is None or (not now and time.monotonic() - self._tended < TEND_EVERY):
            return
        self._tended = time.monotonic()
        self.staging.tend()

    def _watch_disk(self) -> None:
        """A store whose disk was full and has room again: stop the server (the next check starts it again)."""
        free = free_bytes(self.server.store_dir)
        if free is None:
            return
        if free < self.full_below:
            if not self.disk_was_full:
                log.error("nats.disk_full", store=str(self.server.store_dir), free_bytes=free)
            self.disk_was_full = True
        elif self.disk_was_full and free > self.room_above:
            self.disk_was_full = False
            log.warning("nats.restarting_after_disk_full", store=str(self.server.store_dir), free_bytes=free)
            self._stop_server()

    def _stop_server(self) -> None:
        process = self.server.process
        if process is None:
            return
        process.terminate()
        try:
            process.wait(STOP_GRACE)
        except Exception:  # noqa: BLE001 - TimeoutExpired: it hangs on its broken store
            process.kill()
            process.wait()

    def _restart(self) -> None:
        try:
            self.server.start(cancelled=self._stopping.is_set)
        except NatsServerError as error:
            if self._stopping.is_set():  # cancelled by stop(): not a failure
                return
            self._delay = self.backoff.after_death(0.0)
            log.error("nats.restart_failed", error=str(error), port=self.server.port, next_in=self._delay)
            return
        down = time.monotonic() - (self.down_since or time.monotonic())
        self.down_since, self._up_since = None, time.monotonic()
        self.restarts += 1
        process = self.server.process
        log.warning("nats.restarted", pid=process.pid if process is not None else None, port=self.server.port,
                    down_seconds=round(down, 3), restarts=self.restarts)
        self._tend(now=True)
        self.on_restart()

    def stop(self, timeout: float = 20.0) -> None:
        """Stop watching (a start under way is cancelled); the server itself is stopped by its owner."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

"""Whether the log accepts writes now: a small write every second with a deadline, and why the last one failed.

A connection that is up says nothing of writes: a frozen nats-server (SIGSTOP) keeps its TCP connections, and a
full disk leaves the server answering everything but stores. So each control-plane process writes one tiny KV
entry (its own key, in a bucket of its own that keeps one value per key) every `every` seconds and gives it
`deadline` seconds; `/readyz` reads `failure()` (api/http/routes/health.py).

With `store` (the embedded server's store directory) a write that fails on a full disk is named as such. (A full
disk leaves nats-server's file store with a sticky write error; the embedded server's supervisor starts it again
once the disk has room: adapters/nats_supervisor.py.)

On a cluster, a stream whose leader's server died answers "no response from stream" until the others elect a new
leader (raft: 4 to 9 s after a kill -9); writes wait that out (adapters/jetstream/refusals.TRANSIENT), so the probe
does too, for ELECTION_GRACE, before it says the log takes no writes: losing one server of three is not an outage.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from pathlib import Path
from typing import Any

import nats.js.errors
import structlog
from nats.js.api import KeyValueConfig, StorageType

from adapters.background import Background
from adapters.jetstream.connection import Connection
from adapters.jetstream.replicas import hold_replicas
from adapters.sysinfo import FULL_BELOW, free_bytes

log = structlog.get_logger("roving.log_probe")
EVERY, DEADLINE = 1.0, 2.0
ELECTION_GRACE = 10.0  # how long a leaderless stream is waited on before /readyz says so
LEADERLESS = "the log's stream has no leader"


class LogProbe:
    """A thread that writes to the log every `every` s; `failure()` is "" while the last write landed in time."""

    def __init__(self, connection: Connection, every: float = EVERY, deadline: float = DEADLINE,
                 store: Path | None = None) -> None:
        self.connection, self.every, self.deadline, self.store = connection, every, deadline, store
        self.bucket = f"roving_{connection.names.cluster.replace('-', '_')}_probe"
        self.key = f"{socket.gethostname()}-{os.getpid()}".replace(".", "_")
        self._kv: Any = None
        self._failure = "the log has not been written to yet"
        self._began: float | None = None  # when the write under way began
        self._failing_since: float | None = None
        self._leaderless_since: float | None = None  # the probe's stream has answered "no response" since
        self.background = Background(self._run, "roving-log-probe", join_seconds=deadline + 2)
        self._stop = self.background.stopping

    def start(self) -> LogProbe:
        self.background.start()
        return self

    def stop(self) -> None:
        self.background.stop()

    def failure(self) -> str:
        """Why the log cannot take writes now, or "". A write under way past its deadline counts already."""
        began = self._began
        if began is not None and time.monotonic() - began > self.deadline:
            return self._stalled(time.monotonic() - began)
        return self._failure

    def _run(self) -> None:
        while not self._stop.is_set():
            began = time.monotonic()
            self._record(self._write())
            self._stop.wait(max(0.0, self.every - (time.monotonic() - began)))

    def _write(self) -> str:
        """One timed write; "" when it landed, else why not. A full disk counts even when this write landed: a few
        small writes still fit in the pages a store's files hold, then every write fails."""
        self._began = began = time.monotonic()
        try:
            self.connection.loop.run(self._put(), timeout=self.deadline + 0.5)
            return self._disk()
        except (TimeoutError, nats.errors.TimeoutError):
            return self._stalled(time.monotonic() - began)
        except nats.js.errors.NoStreamResponseError:
            return self._disk() or f"{LEADERLESS}: its servers are electing one, or too few of them are up to"
        except Exception as error:  # noqa: BLE001 - any refusal is the answer /readyz gives
            return self._disk() or f"the log refused a write: {type(error).__name__}: {error}"[:300]
        finally:
            self._began = None

    async def _put(self) -> None:
        if self._kv is None:
            self._kv = await asyncio.wait_for(self._open(), self.deadline)
        await asyncio.wait_for(self._kv.put(self.key, b"%d" % time.time_ns()), self.deadline)

    async def _open(self) -> Any:
        js = self.connection.client.js
        try:
            kv = await js.key_value(self.bucket)
        except nats.js.errors.BucketNotFoundError:
            config = KeyValueConfig(bucket=self.bucket, history=1, ttl=300, storage=StorageType.FILE,
                                    replicas=self.connection.replicas)
            return await js.create_key_value(config)
        await hold_replicas(js, f"KV_{self.bucket}", self.connection.replicas)
        return kv

    def _stalled(self, seconds: float) -> str:
        if not self.connection.reachable:
            return "the log (NATS JetStream) is unreachable"
        return self._disk() or (f"a write to the log got no answer in {seconds:.1f}s: nats-server is frozen or "
                                f"overloaded")

    def _disk(self) -> str:
        free = free_bytes(self.store) if self.store is not None else None
        if free is None or free >= FULL_BELOW:
            return ""
        return f"the log's disk is full: {free / 2**20:.1f} MiB free under {self.store}"

    def _record(self, failure: str) -> None:
        now = time.monotonic()
        if failure.startswith(LEADERLESS):
            self._leaderless_since = self._leaderless_since or now
            if now - self._leaderless_since < ELECTION_GRACE:
                log.info("log_probe.leaderless", for_seconds=round(now - self._leaderless_since, 1))
                failure = ""  # an election under way: writes wait it out
        else:
            self._leaderless_since = None
        if failure and not self._failure:
            log.warning("log_probe.failing", reason=failure)
        elif not failure and self._failure and self._failing_since is not None:
            log.info("log_probe.recovered", after_seconds=round(now - self._failing_since, 1))
        self._failure = failure
        self._failing_since = (self._failing_since or now) if failure else None

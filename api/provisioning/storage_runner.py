"""The volume provisioners' runner: while this control plane holds their lease, each volume asked for and not yet
answered is given to its provisioner's program (adapters.provisioners.storage_command), on a thread of its own,
and the answer is recorded: ready with its directory (the waiting workflows run) or failed with the reason.

Nothing is recorded before the program runs: a control plane that restarts, or takes the lease over, runs it again
under the same request id, and the program (idempotent by it) answers what it made before.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import structlog
from eventsourcing.persistence import OperationalError

from adapters.background import Background
from adapters.leases import NamedLease
from adapters.provisioners.storage_command import provision
from domain.app.errors import AppError
from domain.app.storage_provisioners import current
from domain.storage_provisioner import Volume
from projections.base import kind_of

log = structlog.get_logger("roving.volume_provisioner")
INTERVAL = 1.0
RENEW_AFTER = 0.25  # of the lease TTL, as the node provisioners' runner
LEASE = "volume-provisioners"


def utcnow() -> datetime:
    return datetime.now(UTC)


class StorageRunner:
    def __init__(self, roving: Any, leases: Any, signals: Any = None, interval: float = INTERVAL,
                 ready: Callable[[], bool] | None = None) -> None:
        self.roving, self.leases, self.interval = roving, leases, interval
        self.ready = ready or (lambda: True)
        self.holder = f"{socket.gethostname()}:{os.getpid()}"
        self.lease = NamedLease(leases, LEASE) if leases is not None else None
        self.renewed = float("-inf")
        self.busy: set[str] = set()
        self.lock = threading.Lock()
        self.background = Background(self._run, "roving-volume-provisioners", join_seconds=30)
        self.wake, self.stopping = self.background.wake, self.background.stopping
        if signals is not None:
            signals.listen(self.observe)

    def start(self) -> StorageRunner:
        self.background.start()
        return self

    def stop(self) -> None:
        self.background.stop()

    def observe(self, batch: Any) -> None:
        if any(kind_of(e).startswith("StorageProvisioners.") for _, e in batch):
            self.wake.set()

    def _run(self) -> None:
        while not self.stopping.is_set():
            self.wake.wait(self.interval)
            self.wake.clear()
            if self.stopping.is_set():
                break
            try:
                self.tick()
            except OperationalError as error:
                log.warning("volume_provisioner.log_unavailable", error=str(error))
            except Exception:  # noqa: BLE001 - the runner must outlive one bad look; the next tick tries again
                log.exception("volume_provisioner.tick_failed")

    def tick(self) -> None:
        if not self.ready() or not self._hold():
            return
        found = current(self.roving)
        if found is None:
            return
        for volume in found.pending():
            spec = found.definitions.get(volume.provisioner)
            with self.lock:
                if spec is None or volume.request in self.busy:
                    continue
                self.busy.add(volume.request)
            threading.Thread(target=self._provision, args=(volume, spec), daemon=True,
                             name=f"roving-volume-{volume.request[:8]}").start()

    def _hold(self) -> bool:
        if self.lease is None:
            return True
        asked = time.monotonic()
        if asked - self.renewed < self.leases.ttl * RENEW_AFTER:
            return True
        holding = self.lease.hold(self.holder)
        self.renewed = asked if holding else float("-inf")
        return holding

    def _provision(self, volume: Volume, spec: Any) -> None:
        started, recorded = time.monotonic(), False
        try:
            outcome = provision(volume.provisioner, spec, volume)
            if outcome.path:
                self.roving.volume_ready(volume.request, outcome.path, utcnow())
                log.info("volume_provisioner.ready", provisioner=volume.provisioner, request=volume.request,
                         path=outcome.path, seconds=round(time.monotonic() - started, 2))
            else:
                self.roving.volume_failed(volume.request, outcome.reason, utcnow())
                log.warning("volume_provisioner.failed", provisioner=volume.provisioner, request=volume.request,
                            reason=outcome.reason)
            recorded = True
        except AppError as error:  # moved on meanwhile (deleted, answered by another): the next look decides
            log.info("volume_provisioner.refused", request=volume.request, reason=str(error))
        except Exception:  # noqa: BLE001 - logged; asked again on the next tick
            log.exception("volume_provisioner.step_failed", request=volume.request)
        finally:
            with self.lock:
                self.busy.discard(volume.request)
            if recorded:  # the next look at once; after an error, at the next interval (never a hot loop)
                self.wake.set()

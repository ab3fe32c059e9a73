"""The audit feed where several API workers share a log: it runs in the one whose scheduler runner leads.

DuckDB lets one process open the audit file, so of several workers (api.up.workers) or control-plane hosts
only the holder of the scheduler's leader lease feeds it and answers audit reads; the others answer those
routes 503 naming the reason. When the lease moves, the old holder closes the file and the new one opens it
(retrying while the old one still holds it) and carries on from the position the file recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog
from eventsourcing.persistence import OperationalError

from adapters.background import Background

log = structlog.get_logger("roving.audit_lease")
CHECK_SECONDS = 1.0
HANDOVER_SECONDS = 30.0  # how long a hand-over waits for the feed's round before closing the file under it


class AuditByLease:
    """Starts the audit (via `open_audit`, returning (store, audit log, feed)) while `runner` leads; stops it after.

    `publish(audit_or_none)` tells the routes which audit log answers now."""

    def __init__(self, runner: Any, open_audit: Callable[[], tuple[Any, Any, Any]],
                 publish: Callable[[Any], None], check_seconds: float = CHECK_SECONDS) -> None:
        self.runner, self.open_audit, self.publish = runner, open_audit, publish
        self.check_seconds = check_seconds
        self.parts: tuple[Any, Any, Any] | None = None
        self.background = Background(self._run, "roving-audit-lease")
        self._stopping = self.background.stopping

    @property
    def running(self) -> bool:
        return self.parts is not None

    def start(self) -> AuditByLease:
        self.background.start()
        return self

    def check(self) -> None:
        """Open the audit when the runner leads and it is closed; close it when the runner stopped leading."""
        if self.runner.leading and self.parts is None:
            try:
                self.parts = self.open_audit()
            except Exception as error:  # noqa: BLE001 - the previous holder may still have the file: next check
                log.warning("audit_lease.open_failed", error=str(error))
                return
            self.publish(self.parts[1])
            log.info("audit_lease.feeding")
        elif self.runner.leading and self.parts is not None:
            self.publish(self.parts[1])  # again: what it announced lapses with the leases' TTL
        elif not self.runner.leading and self.parts is not None:
            self.close()
            log.info("audit_lease.handed_over")

    def close(self) -> None:
        parts, self.parts = self.parts, None
        self.publish(None)
        if parts is not None:
            store, _, feed = parts
            feed.stop(HANDOVER_SECONDS)  # its round may wait on a log server that just went away
            if feed.alive:
                log.warning("audit_lease.feed_still_running", waited_s=HANDOVER_SECONDS)
            store.close()  # a round still running ends on the closed file; its transaction never committed

    def stop(self) -> None:
        self.background.stop()
        self.close()

    def _run(self) -> None:
        while not self._stopping.wait(self.check_seconds):
            try:
                self.check()
            except (OperationalError, TimeoutError, OSError) as error:  # the log is away: the next check tries again
                log.warning("audit_lease.check_failed", error=str(error) or type(error).__name__)
            except Exception:  # noqa: BLE001 - the check runs again; the audit must not stop for good
                log.exception("audit_lease.check_failed")

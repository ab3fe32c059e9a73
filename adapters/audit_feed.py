"""The audit feed: pages the log into the audit projection on a daemon thread, then polls for new events.

The projection writes its rows and its position in one DuckDB transaction, so the feed keeps no state
of its own: every round reads from `projection.position + 1`. A failure is logged and the round is
tried again from that position, so nothing is skipped and nothing lands twice. Polling (rather than a
subscription) lets each round write whatever arrived since the last one as one batch.
"""

from __future__ import annotations

import threading
from typing import Any

import structlog

log = structlog.get_logger("roving.audit_feed")


class AuditFeed:
    """Keeps `projection` (an AuditProjection) up to date with `recorder`'s notifications until stopped."""

    def __init__(self, recorder: Any, projection: Any, page: int = 5000, poll_seconds: float = 0.2,
                 retry_seconds: float = 1.0) -> None:
        self.recorder, self.projection, self.page = recorder, projection, page
        self.poll_seconds, self.retry_seconds = poll_seconds, retry_seconds
        self.caught_up = threading.Event()
        self._stopped = threading.Event()
        self._applied = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="roving-audit-feed", daemon=True)

    @property
    def position(self) -> int:
        return self.projection.position

    def start(self) -> AuditFeed:
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop polling and wait for the thread to finish its current batch."""
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def wait_for(self, position: int, timeout: float | None = None) -> bool:
        """Block until the projection has written `position`; False on timeout."""
        with self._applied:
            return self._applied.wait_for(lambda: self.projection.position >= position, timeout)

    def __enter__(self) -> AuditFeed:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                read = self.read_page()
            except Exception:  # noqa: BLE001 - the next round starts again at the projection's committed position
                log.exception("audit_feed.failed", position=self.projection.position)
                self._stopped.wait(self.retry_seconds)
                continue
            if read < self.page:
                if not self.caught_up.is_set():
                    log.info("audit_feed.caught_up", position=self.projection.position)
                    self.caught_up.set()
                self._stopped.wait(self.poll_seconds)

    def read_page(self) -> int:
        """One round: the next page of notifications into the projection; returns how many were read."""
        notifications = self.recorder.select_notifications(start=self.projection.position + 1, limit=self.page)
        if notifications:
            self.projection.apply([(n.id, n) for n in notifications])
            with self._applied:
                self._applied.notify_all()
        return len(notifications)

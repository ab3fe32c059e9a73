"""The log tailer: feeds the views from the log on a daemon thread, catching up in pages, then live.

It pages `select_notifications` from the views' position until the log is read (then `caught_up` is
set, for /readyz), and follows with `subscribe(gt=position)`. With `snapshots`, the views start from the
saved snapshot when it fits (see adapters.view_snapshots) and are saved again every so many events. A
failure is logged and the tail starts again from the last applied position, so no event is skipped and
none is applied twice.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import structlog
from eventsourcing.persistence import Notification

from projections.views import Views

log = structlog.get_logger("roving.tailer")


class Tailer:
    """Keeps `views` up to date with `app`'s log until stopped."""

    def __init__(self, app: Any, views: Views, page: int = 1000, retry_seconds: float = 1.0,
                 snapshots: Any = None) -> None:
        self.app, self.views, self.page, self.retry_seconds = app, views, page, retry_seconds
        self.snapshots = snapshots
        self.caught_up = threading.Event()
        self._stopped = threading.Event()
        self._subscription: Any = None
        self._thread = threading.Thread(target=self._run, name="roving-tailer", daemon=True)

    def start(self) -> Tailer:
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop following and wait for the thread to end."""
        self._stopped.set()
        subscription = self._subscription
        if subscription is not None:
            subscription.stop()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def wait_for(self, position: int, timeout: float | None = None) -> bool:
        """Block until the views applied `position` (an API reading its own write); False on timeout."""
        return self.views.wait_for(position, timeout)

    def __enter__(self) -> Tailer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        if self.snapshots is not None and self.views.position == 0:
            self._guarded(self.snapshots.restore)
        while not self._stopped.is_set():
            try:
                self._catch_up()
                self.caught_up.set()
                self._follow()
            except Exception:  # noqa: BLE001 - keep tailing; the next round resumes at the last applied position
                log.exception("tailer.failed", position=self.views.position)
                self._stopped.wait(self.retry_seconds)

    def _catch_up(self) -> None:
        while not self._stopped.is_set():
            notifications = self.app.recorder.select_notifications(start=self.views.position + 1, limit=self.page)
            if notifications:
                self._apply(notifications)
            if len(notifications) < self.page:
                log.info("tailer.caught_up", position=self.views.position)
                return

    def _follow(self) -> None:
        with self.app.recorder.subscribe(gt=self.views.position) as subscription:
            self._subscription = subscription
            if self._stopped.is_set():
                return
            take_ready = getattr(subscription, "take_ready", lambda limit: [])
            for notification in subscription:
                self._apply([notification, *take_ready(self.page)])  # one lock and one wake-up per burst
                if self._stopped.is_set():
                    return

    def _apply(self, notifications: Sequence[Notification]) -> None:
        to_event = self.app.mapper.to_domain_event
        self.views.apply([(n.id, to_event(n)) for n in notifications])
        if self.snapshots is not None and self.snapshots.due(self.views):
            self._guarded(self.snapshots.save_in_child)

    def _guarded(self, step: Any) -> None:
        """A snapshot that cannot be read or written costs time, never the tail."""
        try:
            step(self.views)
        except Exception:  # noqa: BLE001 - the log stays the truth; the views are rebuilt or saved later
            log.exception("tailer.snapshot_failed", position=self.views.position)

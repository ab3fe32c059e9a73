"""The log tailer: the follower (adapters.follower) that keeps the views up to date, with view snapshots.

It decodes notifications into domain events with the application's mapper, catches up in pages (then
`caught_up` is set, for /readyz) and follows live with `subscribe`. With `snapshots`, the views start
from the saved snapshot when it fits (see adapters.view_snapshots) and are saved again every so many
events, by a forked child, so the tail pauses only for the fork.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import structlog
from eventsourcing.persistence import Notification

from adapters.follower import Follower
from projections.views import Views

log = structlog.get_logger("roving.tailer")


class Tailer(Follower):
    """Keeps `views` up to date with `app`'s log until stopped."""

    def __init__(self, app: Any, views: Views, page: int = 1000, retry_seconds: float = 1.0,
                 snapshots: Any = None) -> None:
        super().__init__(app.recorder, views, domain_events(app.mapper.to_domain_event), name="tailer", page=page,
                         retry_seconds=retry_seconds)
        self.app, self.views, self.snapshots = app, views, snapshots

    def starting(self) -> None:
        if self.snapshots is not None and self.views.position == 0:
            self._guarded(self.snapshots.restore)

    def applied(self) -> None:
        if self.snapshots is not None and self.snapshots.due(self.views):
            self._guarded(self.snapshots.save_in_child)

    def _guarded(self, step: Callable[[Views], Any]) -> None:
        """A snapshot that cannot be read or written costs time, never the tail."""
        try:
            step(self.views)
        except Exception:  # noqa: BLE001 - the log stays the truth; the views are rebuilt or saved later
            log.exception("tailer.snapshot_failed", position=self.views.position)


def domain_events(to_event: Callable[[Notification], Any]) -> Callable[[Sequence[Notification]], list]:
    """Notifications -> (position, domain event), as every view's `apply` takes them."""
    def decode(notifications: Sequence[Notification]) -> list[tuple[int, Any]]:
        return [(n.id, to_event(n)) for n in notifications]
    return decode

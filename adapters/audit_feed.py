"""The audit feed: the follower (adapters.follower) that keeps the audit projection up to date.

It decodes each notification's state to plain values (a `LoggedEvent`: the audit records every event,
even one whose class this build no longer has, so it does not make domain objects) and polls rather
than subscribes, so each round writes whatever arrived since the last one as one batch. The projection
writes its rows and its position in one DuckDB transaction, so after a crash the feed starts again at
the committed position: nothing is skipped and nothing lands twice.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from eventsourcing.persistence import Notification

from adapters.follower import Follower
from adapters.jetstream.subjects import kind_of
from adapters.transcoder import MsgspecTranscoder
from projections.audit import AuditProjection, LoggedEvent


class AuditFeed(Follower):
    """Keeps `projection` up to date with `recorder`'s notifications until stopped."""

    def __init__(self, recorder: Any, projection: AuditProjection, page: int = 5000, poll_seconds: float = 0.2,
                 retry_seconds: float = 1.0) -> None:
        super().__init__(recorder, projection, LoggedEvents(), name="audit_feed", page=page,
                         retry_seconds=retry_seconds, poll_seconds=poll_seconds)
        self.recorder, self.projection = recorder, projection
        self.companions: list[Any] = []  # what works on the same store (the retention): stopped before the feed

    def stop(self, timeout: float = 5.0) -> None:
        for companion in self.companions:
            companion.stop()
        super().stop(timeout)


class LoggedEvents:
    """Notifications -> (position, LoggedEvent); the kind of each topic is worked out once."""

    def __init__(self) -> None:
        self._decode = MsgspecTranscoder().decode
        self._kinds: dict[str, str] = {}

    def __call__(self, notifications: Sequence[Notification]) -> Iterator[tuple[int, LoggedEvent]]:
        """Lazily: the projection turns each into a row before the next is decoded."""
        return ((n.id, self.event(n)) for n in notifications)

    def event(self, n: Notification) -> LoggedEvent:
        kind = self._kinds.get(n.topic)
        if kind is None:
            kind = self._kinds[n.topic] = kind_of(n.topic)
        return LoggedEvent(n.originator_id, n.originator_version, n.topic, kind, self._decode(n.state))

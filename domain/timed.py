"""The aggregate base of this domain: an event's timestamp is the `at` its command was given, never the clock."""

from __future__ import annotations

from typing import Any

from eventsourcing.domain import Aggregate


class TimedAggregate(Aggregate):
    """Replays are deterministic: the event time is what the caller passed in as `at`."""

    @classmethod
    def _create(cls, event_class: Any, *, id: Any = None, **kwargs: Any) -> Any:
        kwargs.setdefault("timestamp", kwargs.get("at"))
        return super()._create(event_class, id=id, **kwargs)

    def trigger_event(self, event_class: Any, **kwargs: Any) -> None:
        kwargs.setdefault("timestamp", kwargs.get("at"))
        super().trigger_event(event_class, **kwargs)

"""The aggregate base of this domain: an event's timestamp is the `at` its command was given, never the clock."""

from __future__ import annotations

from typing import Any, ClassVar

from eventsourcing.domain import Aggregate

from domain.copying import copied


class TimedAggregate(Aggregate):
    """Replays are deterministic: the event time is what the caller passed in as `at`. A command's copy shares
    what never changes after the aggregate is made (`unchanging`: attributes set once, immutable by convention)."""

    unchanging: ClassVar[tuple[str, ...]] = ()  # ClassVar: eventsourcing takes other annotations for event fields
    takes_turns: ClassVar[bool] = False  # one command of a process at a time changes it (domain.app.aggregate_locks)

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return copied(self, memo, self.unchanging)

    @classmethod
    def _create(cls, event_class: Any, *, id: Any = None, **kwargs: Any) -> Any:
        kwargs.setdefault("timestamp", kwargs.get("at"))
        return super()._create(event_class, id=id, **kwargs)

    def trigger_event(self, event_class: Any, **kwargs: Any) -> None:
        kwargs.setdefault("timestamp", kwargs.get("at"))
        super().trigger_event(event_class, **kwargs)

"""A commit's events grouped by aggregate, and the committer as the group commit sees it.

Shared by `commit` (which makes and publishes parts) and `grouping` (which batches them), so neither has
to import the other.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from uuid import UUID

from eventsourcing.persistence import IntegrityError, StoredEvent, Tracking


@dataclass
class Part:
    originator_id: UUID | str
    events: list[StoredEvent]

    @property
    def first(self) -> int:
        return self.events[0].originator_version

    @property
    def last(self) -> StoredEvent:
        return self.events[-1]


def group(stored_events: Sequence[StoredEvent]) -> list[Part]:
    """The events of each aggregate, in order. Two copies of one aggregate in a commit (a version written twice)
    are refused at once as the store's other recorders refuse them (IntegrityError), without asking the log: it would
    refuse the batch as a duplicate, and reconciling that with the log only repeats the refusal."""
    parts: dict[object, Part] = {}
    for event in stored_events:
        part = parts.setdefault(event.originator_id, Part(event.originator_id, []))
        if part.events and event.originator_version != part.events[-1].originator_version + 1:
            raise IntegrityError(f"one commit holds aggregate {event.originator_id} twice (version "
                                   f"{event.originator_version} after {part.events[-1].originator_version})")
        part.events.append(event)
    return list(parts.values())


class PartCommitter(Protocol):
    """What the group commit asks of `commit.Committer`."""

    stream: str

    def expectations(self, parts: list[Part]) -> dict[object, int]: ...

    def messages(self, parts: list[Part], expected: dict[object, int], tracking: Tracking | None,
                 track_expected: int | None) -> list[Any]: ...

    def send(self, messages: list[Any], done: Callable[[int | None, BaseException | None], None]) -> None: ...

    def remember(self, parts: list[Part], last_seq: int, count: int) -> list[int]: ...

    async def commit_parts(self, parts: list[Part], expected: dict[object, int], tracking: Tracking | None,
                           retried: bool = False) -> list[int]: ...

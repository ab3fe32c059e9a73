"""Given a log that fails once, the tailer logs it and resumes from the last applied position."""

from __future__ import annotations

import queue
from types import SimpleNamespace

from eventsourcing.persistence import Mapper, Notification

from adapters.tailer import Tailer
from adapters.transcoder import MsgspecTranscoder
from projections.views import Views
from tests.unit.projections.builders import ONE_JOB, submit

MAPPER = Mapper(transcoder=MsgspecTranscoder())


class Subscription:
    """Blocks like a live subscription until stopped."""

    def __init__(self) -> None:
        self.items: queue.Queue = queue.Queue()

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __iter__(self) -> Subscription:
        return self

    def __next__(self) -> Notification:
        item = self.items.get()
        if item is None:
            raise StopIteration
        return item

    def stop(self) -> None:
        self.items.put(None)


class FlakyRecorder:
    """Serves notifications from a list; the first read fails like a dropped connection."""

    def __init__(self, notifications: list[Notification]) -> None:
        self.notifications, self.failures, self.starts = notifications, 1, []

    def select_notifications(self, start: int, limit: int) -> list[Notification]:
        self.starts.append(start)
        if self.failures:
            self.failures -= 1
            raise ConnectionError("connection lost")
        return [n for n in self.notifications if n.id >= start][:limit]

    def subscribe(self, gt: int) -> Subscription:
        return Subscription()


def notifications(*aggregates) -> list[Notification]:
    stored = [MAPPER.to_stored_event(e) for a in aggregates for e in a.collect_events()]
    return [Notification(id=i, originator_id=s.originator_id, originator_version=s.originator_version,
                         topic=s.topic, state=s.state) for i, s in enumerate(stored, start=1)]


def test_a_failed_read_is_retried_from_the_last_applied_position():
    recorder = FlakyRecorder(notifications(*(submit(ONE_JOB, name=name) for name in "abcd")))  # one event each
    views = Views()
    with Tailer(SimpleNamespace(recorder=recorder, mapper=MAPPER), views, page=3, retry_seconds=0.01) as tailer:
        assert tailer.caught_up.wait(5)
        assert tailer.wait_for(4, timeout=5)
    assert sorted(r.name for r in views.workflows.list()) == ["a", "b", "c", "d"]
    assert recorder.starts[:3] == [1, 1, 4]

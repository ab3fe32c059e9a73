"""Long reads of the log go through a consumer kept between pages: they give exactly what direct gets give
(gaps, tracking positions, topics, a stop), leave one consumer on the server, and still work where the
server refuses consumers."""

from __future__ import annotations

import itertools
import time
from uuid import uuid4

import nats.js.errors
import pytest
from eventsourcing.persistence import StoredEvent, Tracking

from adapters.jetstream.connection import Connection
from adapters.jetstream.recorders import JetStreamProcessRecorder

_clusters = itertools.count()
TOPICS = ("ledger:Ledger.Opened", "ledger:Ledger.Entered")


@pytest.fixture
def recorder(nats_url: str):
    connection = Connection(nats_url, f"reads{next(_clusters)}-{uuid4().hex[:6]}")
    yield JetStreamProcessRecorder(connection)
    connection.close()


def fill(recorder: JetStreamProcessRecorder, commits: int, first: int = 1) -> None:
    """Commits of three events of one new aggregate each, every tenth with a tracking position."""
    for number in range(first, first + commits):
        oid = uuid4()
        events = [StoredEvent(oid, v, TOPICS[v > 1], f"state {number}.{v}".encode()) for v in (1, 2, 3)]
        tracking = Tracking("upstream", number) if number % 10 == 0 else None
        recorder.insert_events(events, tracking=tracking)


def direct(recorder: JetStreamProcessRecorder, **kwargs) -> list:
    """The same read by direct gets only (a read of fewer than 100 goes that way), page by page."""
    found, start = [], kwargs.pop("start", 1)
    limit, stop, topics = kwargs.get("limit", 10**9), kwargs.get("stop"), kwargs.get("topics", ())
    while len(found) < limit:
        page = recorder.select_notifications(start, min(50, limit - len(found)), stop=stop, topics=topics)
        if not page:
            break
        found.extend(page)
        start = page[-1].id + 1
    return found


def consumers(recorder: JetStreamProcessRecorder) -> int:
    client = recorder.connection.client
    return recorder.connection.run(lambda: client.js.stream_info(recorder.stream)).state.consumer_count


def settled_consumers(recorder: JetStreamProcessRecorder, seconds: float = 5) -> int:
    """The stream's consumers once deletions in flight are done (a consumer given up on goes in the background)."""
    deadline = time.monotonic() + seconds
    while (count := consumers(recorder)) != 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    return count


def as_tuples(notifications: list) -> list[tuple]:
    return [(n.id, n.originator_id, n.originator_version, n.topic, n.state) for n in notifications]


def test_a_long_read_gives_what_direct_gets_give_with_gaps_tracking_topics_and_a_stop(recorder):
    fill(recorder, 120)  # 360 events and 12 tracking positions
    client = recorder.connection.client
    for seq in (5, 6, 200):  # gaps in the sequence
        recorder.connection.run(lambda seq=seq: client.js.delete_msg(recorder.stream, seq))
    whole = recorder.select_notifications(1, 1000)
    assert len(whole) == 360 - 3 and 5 not in {n.id for n in whole} and 200 not in {n.id for n in whole}
    assert as_tuples(whole) == as_tuples(direct(recorder))
    assert as_tuples(recorder.select_notifications(100, 150)) == as_tuples(direct(recorder, start=100, limit=150))
    assert as_tuples(recorder.select_notifications(1, 500, stop=250)) == as_tuples(direct(recorder, stop=250))
    entered = recorder.select_notifications(1, 300, topics=[TOPICS[1]])
    assert len(entered) == 240 - 3 and as_tuples(entered) == as_tuples(direct(recorder, topics=[TOPICS[1]]))


def test_a_replay_page_after_page_keeps_one_consumer_and_a_jump_replaces_it(recorder):
    fill(recorder, 150)
    start, pages = 1, []
    while page := recorder.select_notifications(start, 100):
        pages.append(page)
        start = page[-1].id + 1
    assert sum(len(p) for p in pages) == 450
    assert settled_consumers(recorder) == 1  # one read the pages; any other was given up on and is being deleted
    first = recorder.cursor.consumer
    assert [n.originator_version for n in recorder.select_notifications(4, 100)][:3] == [1, 2, 3]
    assert recorder.cursor.consumer != first
    assert settled_consumers(recorder) == 1  # the one given up on is deleted


def test_events_written_after_a_read_come_on_its_consumer_s_next_page(recorder):
    fill(recorder, 40)  # 120 events; tracking positions at 31, 62, 93 and 124
    assert len(recorder.select_notifications(1, 200)) == 120
    consumer = recorder.cursor.consumer
    fill(recorder, 40, first=41)
    later = recorder.select_notifications(125, 200)
    assert recorder.cursor.consumer == consumer
    assert len(later) == 120 and later[0].id == 125 and later[0].originator_version == 1


def test_where_consumers_are_refused_a_long_read_uses_direct_gets(recorder, monkeypatch):
    fill(recorder, 50)
    expected = as_tuples(direct(recorder))

    async def refused(*args, **kwargs):
        raise nats.js.errors.APIError(description="permissions violation", err_code=10000)

    monkeypatch.setattr(recorder.connection.client.js, "add_consumer", refused)
    assert as_tuples(recorder.select_notifications(1, 1000)) == expected
    assert not recorder.cursor.usable and consumers(recorder) == 0
    assert as_tuples(recorder.select_notifications(1, 1000)) == expected


def test_a_consumer_lost_between_pages_is_made_again(recorder):
    fill(recorder, 70)
    first = recorder.select_notifications(1, 100)
    client = recorder.connection.client
    recorder.connection.run(lambda: client.js.delete_consumer(recorder.stream, recorder.cursor.consumer))
    rest = recorder.select_notifications(first[-1].id + 1, 1000)
    assert as_tuples(first + rest) == as_tuples(direct(recorder)) and len(first + rest) == 210

"""Event store benchmark: one JSON line of figures, all against one embedded nats-server in one run.

Figures: raw awaited js.publish/s (the ceiling), single-thread Application.save/s through the JetStream
recorder, pipelined saves/s from several threads, read of one 1,000-event aggregate among 100,000
events, notification replay events/s, and the msgspec transcoder against eventsourcing's JSON one.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from uuid import uuid4

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import nats  # noqa: E402
from eventsourcing.application import Application  # noqa: E402
from eventsourcing.domain import Aggregate, event  # noqa: E402
from eventsourcing.persistence import DatetimeAsISO, DecimalAsStr, JSONTranscoder, StoredEvent, UUIDAsHex  # noqa: E402
from nats.js.api import StreamConfig  # noqa: E402

from adapters.nats_server import NatsServer  # noqa: E402
from adapters.transcoder import MsgspecTranscoder  # noqa: E402

PAYLOAD = "x" * 200  # with ids, version and timestamp the stored state is about 300 bytes


class Item(Aggregate):
    @event("Created")
    def __init__(self, note: str) -> None:
        self.note = note

    @event("Noted")
    def add(self, note: str) -> None:
        self.note = note


def raw_publish_rate(url: str, count: int) -> float:
    async def run() -> float:
        nc = await nats.connect(url)
        js = nc.jetstream()
        await js.add_stream(StreamConfig(name="RAW", subjects=["raw.>"]))
        body = b"x" * 300
        started = time.perf_counter()
        for i in range(count):
            await js.publish(f"raw.{i % 100}", body)
        elapsed = time.perf_counter() - started
        await nc.close()
        return count / elapsed

    return asyncio.run(run())


def app_for(url: str, cluster: str) -> Application:
    return Application(env={"PERSISTENCE_MODULE": "adapters.jetstream", "ROVING_NATS_URL": url,
                            "ROVING_CLUSTER": cluster})


def save_rate(app: Application, count: int) -> float:
    started = time.perf_counter()
    for _ in range(count):
        app.save(Item(PAYLOAD))
    return count / (time.perf_counter() - started)


def threaded_save_rate(app: Application, threads: int, per_thread: int) -> float:
    workers = [threading.Thread(target=save_rate, args=(app, per_thread)) for _ in range(threads)]
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return threads * per_thread / (time.perf_counter() - started)


def fill_log(app: Application, total: int, target_events: int):
    """`total` events in commits of 1,000; one aggregate's `target_events` are spread through them."""
    recorder, target, version = app.recorder, uuid4(), 0
    commits = total // 1000
    per_commit = target_events // commits
    state = app.mapper.transcoder.encode({"note": PAYLOAD, "originator_id": target})
    for _ in range(commits):
        batch = [StoredEvent(uuid4(), 1, "bench:Item.Created", state) for _ in range(1000 - per_commit)]
        for _ in range(per_commit):
            version += 1
            batch.append(StoredEvent(target, version, "bench:Item.Noted", state))
        recorder.insert_events(batch)
    return target


def median_ms(fn, runs: int = 7) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def replay_rate(app: Application) -> float:
    started, count, start = time.perf_counter(), 0, 1
    while True:
        page = app.recorder.select_notifications(start=start, limit=1000)
        if not page:
            break
        count += len(page)
        start = page[-1].id + 1
    return count / (time.perf_counter() - started)


def transcoder_us(transcoder, obj, runs: int = 20000) -> float:
    started = time.perf_counter()
    for _ in range(runs):
        transcoder.decode(transcoder.encode(obj))
    return (time.perf_counter() - started) / runs * 1e6


def transcoders() -> dict[str, float]:
    obj = {"originator_id": uuid4(), "originator_version": 7, "timestamp": datetime.now(UTC),
           "note": PAYLOAD, "amount": Decimal("10.50"), "tags": ["a", "b"], "count": 3}
    json_t = JSONTranscoder()
    for t in (UUIDAsHex(), DecimalAsStr(), DatetimeAsISO()):
        json_t.register(t)
    msgspec_us, json_us = transcoder_us(MsgspecTranscoder(), obj), transcoder_us(json_t, obj)
    return {"msgspec_roundtrip_us": round(msgspec_us, 2), "json_roundtrip_us": round(json_us, 2),
            "msgspec_speedup": round(json_us / msgspec_us, 2)}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, NatsServer(Path(tmp)) as server:
        raw = raw_publish_rate(server.url, 3000)
        app = app_for(server.url, "bench")
        save_rate(app, 200)  # warm-up
        single = save_rate(app, 3000)
        threaded = threaded_save_rate(app, threads=8, per_thread=500)
        app.close()
        app = app_for(server.url, "bigread")
        target = fill_log(app, 100_000, 1000)
        read_ms = median_ms(lambda: app.recorder.select_events(target))
        assert len(app.recorder.select_events(target)) == 1000
        replay = replay_rate(app)
        app.close()
    figures = {
        "raw_awaited_publish_per_s": round(raw),
        "single_thread_saves_per_s": round(single),
        "single_vs_raw_ratio": round(single / raw, 2),
        "threaded_saves_per_s_8_threads": round(threaded),
        "read_aggregate_ms": round(read_ms, 2),
        "replay_events_per_s": round(replay),
        **transcoders(),
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()

"""Event store benchmark: one JSON line of figures, all against one embedded nats-server in one run.

Figures: raw awaited js.publish/s (the ceiling), single-thread Application.save/s through the JetStream
recorder, pipelined saves/s from several threads, read of one 1,000-event aggregate among 100,000
events, notification replay events/s, and the msgspec transcoder against eventsourcing's JSON one.

Baselines measured in the same run, with plain nats-py on its own connection: `raw_awaited_publish_per_s`
(one `js.publish` awaited at a time) and `raw_read_events_per_s` (direct-get batches of 1,000 of the same
log, each message a nats-py `Msg`). The targets are ratios to them: saves >= 0.5x a raw publish, and replay
>= 50,000 events/s. `--compare DIR` also measures saves and replay with the recorder code of another
checkout (e.g. `--compare /work/main` for the code before a change) against the same server, in a
subprocess, and adds its figures under `before` with the speedups. Reads also report the CPU each side (this
process, the nats-server) spends per event, and the events one free core would read at that cost: figures
a shared machine's load moves much less than the rates. Saves and reads are measured in rounds,
each figure once a round, and ratios are medians of the ratios within rounds: a shared machine's load comes
and goes.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from uuid import uuid4

CODE = os.environ.get("ROVING_BENCH_CODE") or str(Path(__file__).resolve().parents[2])  # whose adapters to bench
sys.path.insert(0, CODE)

import nats  # noqa: E402
from eventsourcing.application import Application  # noqa: E402
from eventsourcing.domain import Aggregate, event  # noqa: E402
from eventsourcing.persistence import DatetimeAsISO, DecimalAsStr, JSONTranscoder, StoredEvent, UUIDAsHex  # noqa: E402
from nats.js.api import StreamConfig  # noqa: E402

from adapters.nats_server import NatsServer  # noqa: E402
from adapters.transcoder import MsgspecTranscoder  # noqa: E402

EVENTS = 100_000  # in the log that reads and replay read
PAYLOAD = "x" * 200  # with ids, version and timestamp the stored state is about 300 bytes


class Item(Aggregate):
    @event("Created")
    def __init__(self, note: str) -> None:
        self.note = note

    @event("Noted")
    def add(self, note: str) -> None:
        self.note = note


def raw_publish_rate(url: str, count: int, stream: str = "RAW") -> float:
    async def run() -> float:
        nc = await nats.connect(url)
        js = nc.jetstream()
        await js.add_stream(StreamConfig(name=stream, subjects=[f"{stream.lower()}.>"]))
        body = b"x" * 300
        started = time.perf_counter()
        for i in range(count):
            await js.publish(f"{stream.lower()}.{i % 100}", body)
        elapsed = time.perf_counter() - started
        await nc.close()
        return count / elapsed

    return asyncio.run(run())


def raw_read_rate(url: str, stream: str, subjects: str) -> float:
    """Every message of `stream` by direct-get batches of 1,000 through nats-py's own parsing: the read ceiling
    of a recorder that takes nats-py's messages as they come."""
    async def run() -> float:
        nc = await nats.connect(url)
        inbox, count, seq = nc.new_inbox(), 0, 1
        ended: asyncio.Future = asyncio.get_running_loop().create_future()
        last = 0

        async def received(msg) -> None:
            nonlocal count, last
            if msg.headers and "Status" in msg.headers:
                ended.set_result(msg)
            else:
                count, last = count + 1, int(msg.headers["Nats-Sequence"])

        await nc.subscribe(inbox, cb=received)
        started = time.perf_counter()
        while True:
            request = json.dumps({"seq": seq, "next_by_subj": subjects, "batch": 1000}).encode()
            await nc.publish(f"$JS.API.DIRECT.GET.{stream}", request, reply=inbox)
            end = await ended
            ended = asyncio.get_running_loop().create_future()
            if end.headers["Status"] != "204" or int(end.headers.get("Nats-Num-Pending", 0)) == 0:
                break
            seq = last + 1
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


class Store:
    """Saves and replay through the recorder of the code under CODE, on streams of its own (`tag`)."""

    def __init__(self, url: str, tag: str) -> None:
        self.saver = app_for(url, f"{tag}save")
        save_rate(self.saver, 200)  # warm-up
        self.reader = app_for(url, f"{tag}read")
        self.target = fill_log(self.reader, EVENTS, 1000)

    def saves(self, count: int) -> float:
        return save_rate(self.saver, count)

    def replay(self) -> float:
        return replay_rate(self.reader)

    def close(self) -> None:
        self.saver.close()
        self.reader.close()


class OtherStore:
    """`Store` with the code of another checkout, in a process of its own that answers one line per ask."""

    def __init__(self, url: str, code: str) -> None:
        env = {**os.environ, "ROVING_BENCH_CODE": code, "PYTHONPATH": code}
        self.process = subprocess.Popen([sys.executable, __file__, "--serve", url], env=env, text=True,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self._ask("ready")

    def _ask(self, line: str) -> float:
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        return float(self.process.stdout.readline())

    def saves(self, count: int) -> float:
        return self._ask(f"saves {count}")

    def replay(self) -> float:
        return self._ask("replay")

    def close(self) -> None:
        self._ask("quit")
        self.process.wait(timeout=30)


def serve(url: str) -> None:
    """The other side of OtherStore: answers on the real stdout; anything else printed (logs) goes to stderr."""
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    store = Store(url, "before")
    for line in sys.stdin:
        ask, *count = line.split()
        if ask == "quit":
            store.close()
            print(0.0, file=answers, flush=True)
            return
        print(store.saves(int(count[0])) if ask == "saves" else store.replay() if ask == "replay" else 0.0,
              file=answers, flush=True)


def cpu_seconds(pid: int) -> float:
    """User and system CPU of a process (all its threads) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CpuPerEvent:
    """CPU each side spends on a read of EVENTS events: figures a shared machine's load does not move much,
    where the wall-clock rate does."""

    def __init__(self, server_pid: int) -> None:
        self.server_pid = server_pid
        self.found: dict[str, list[tuple[float, float]]] = {}

    def measure(self, name: str, read, client_pid: int | None = None):
        def measured() -> float:
            client = client_pid or os.getpid()
            before = cpu_seconds(client), cpu_seconds(self.server_pid)
            rate = read()
            after = cpu_seconds(client), cpu_seconds(self.server_pid)
            self.found.setdefault(name, []).append(
                ((after[0] - before[0]) / EVENTS * 1e6, (after[1] - before[1]) / EVENTS * 1e6))
            return rate
        return measured

    def figures(self, name: str) -> dict[str, float]:
        client = statistics.median(c for c, _ in self.found[name])
        server = statistics.median(s for _, s in self.found[name])
        return {"client_us": round(client, 1), "server_us": round(server, 1),
                "events_per_cpu_s": round(1e6 / (client + server))}


def rounds(measures: dict[str, object], count: int) -> dict[str, list[float]]:
    """Each measure once a round, one after another: a load that comes and goes on a shared machine weighs
    on every figure of a round alike, so ratios are taken within rounds."""
    found: dict[str, list[float]] = {name: [] for name in measures}
    for _ in range(count):
        for name, measure in measures.items():
            found[name].append(measure())  # type: ignore[operator]
    return found


def ratio(found: dict[str, list[float]], top: str, bottom: str) -> float:
    return round(statistics.median(a / b for a, b in zip(found[top], found[bottom], strict=True)), 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", metavar="DIR", help="also measure the recorder code of this checkout")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--serve", metavar="URL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return serve(args.serve)
    with tempfile.TemporaryDirectory() as tmp, NatsServer(Path(tmp)) as server:
        store = Store(server.url, "bench")
        other = OtherStore(server.url, args.compare) if args.compare else None
        subjects = store.reader.recorder.connection.names.prefix("events") + ".>"
        publishes = itertools.count()
        save_measures = {"raw": lambda: raw_publish_rate(server.url, 1000, f"RAW{next(publishes)}"),
                         "saves": lambda: store.saves(1000)}
        cpu = CpuPerEvent(server.process.pid)
        read_measures = {"raw": cpu.measure("raw", lambda: raw_read_rate(server.url, store.reader.recorder.stream,
                                                                         subjects)),
                         "replay": cpu.measure("replay", store.replay)}
        if other is not None:
            save_measures["before"] = lambda: other.saves(1000)
            read_measures["before"] = cpu.measure("before", other.replay, other.process.pid)
        saved, read = rounds(save_measures, args.rounds), rounds(read_measures, max(2, args.rounds // 2))
        threaded = threaded_save_rate(store.saver, threads=8, per_thread=500)
        read_ms = median_ms(lambda: store.reader.recorder.select_events(store.target))
        assert len(store.reader.recorder.select_events(store.target)) == 1000
        store.close()
        if other is not None:
            other.close()
    median = {name: round(statistics.median(values)) for name, values in {**saved, **{
        f"read_{k}": v for k, v in read.items()}}.items()}
    figures = {
        "raw_awaited_publish_per_s": median["raw"],
        "single_thread_saves_per_s": median["saves"],
        "single_vs_raw_ratio": ratio(saved, "saves", "raw"),
        "threaded_saves_per_s_8_threads": round(threaded),
        "read_aggregate_ms": round(read_ms, 2),
        "raw_read_events_per_s": median["read_raw"],
        "replay_events_per_s": median["read_replay"],
        "replay_vs_raw_read_ratio": ratio(read, "replay", "raw"),
        "raw_read_cpu_per_event": cpu.figures("raw"),
        "replay_cpu_per_event": cpu.figures("replay"),
        "targets_met": {"saves_ge_half_raw_publish": ratio(saved, "saves", "raw") >= 0.5,
                        "replay_ge_50k_per_s": median["read_replay"] >= 50_000},
        **transcoders(),
    }
    if other is not None:
        figures["before"] = {
            "code": args.compare,
            "single_thread_saves_per_s": median["before"],
            "single_vs_raw_ratio": ratio(saved, "before", "raw"),
            "replay_events_per_s": median["read_before"],
            "saves_speedup": ratio(saved, "saves", "before"),
            "replay_speedup": ratio(read, "replay", "before"),
            "replay_cpu_per_event": cpu.figures("before"),
        }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()

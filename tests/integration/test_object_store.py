"""The object store adapter against a real nats-server: streamed puts and reads, the put rules, concurrency."""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
from collections.abc import AsyncIterator
from uuid import uuid4

import nats
import pytest

from adapters import object_store
from adapters.object_store import CHUNK, Corrupt, ObjectStore, TooLarge
from domain.app.errors import Conflict
from domain.objects.access import Holder, Verdict, decide_put
from domain.objects.names import Location, Scope


async def pieces(data: bytes, size: int = 50_000) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start:start + size]


def holder() -> Holder:
    return Holder(Scope.USER, uuid4(), "alice")


def decider(name: str, force: bool = False):
    return lambda existing, digest: decide_put(Location(Scope.USER, name), existing and existing.digest, digest, force)


async def read_all(store: ObjectStore, who: Holder, name: str) -> bytes:
    meta = await store.meta(who, name)
    assert meta is not None
    return b"".join([chunk async for chunk in store.read(who, meta)])


def run(nats_url: str, scenario, max_bytes: int = 2**30, loop_thread: bool = False):
    async def main():
        nc = await nats.connect(nats_url)
        try:
            store = ObjectStore(nc.jetstream(), "test", max_bytes)
            return await scenario(store)
        finally:
            await nc.close()
    return asyncio.run(main())


def test_an_object_goes_in_and_comes_back_byte_for_byte_in_chunks(nats_url):
    data = os.urandom(3 * CHUNK + 1234)
    who = holder()

    async def scenario(store):
        verdict, meta = await store.put(who, "runs/a.bin", pieces(data), decider("runs/a.bin"), ("u1", "alice"))
        chunks = [c async for c in store.read(who, meta)]
        return verdict, meta, chunks
    verdict, meta, chunks = run(nats_url, scenario)
    assert verdict is Verdict.CREATED
    assert (meta.size, meta.sha256) == (len(data), hashlib.sha256(data).hexdigest())
    assert b"".join(chunks) == data and max(len(c) for c in chunks) == CHUNK


def test_the_same_content_again_is_unchanged_and_other_content_needs_force(nats_url):
    who = holder()

    async def scenario(store):
        first = await store.put(who, "x", pieces(b"one"), decider("x"), ("u1", "alice"))
        again = await store.put(who, "x", pieces(b"one"), decider("x"), ("u1", "alice"))
        with pytest.raises(Conflict, match="--force"):
            await store.put(who, "x", pieces(b"two"), decider("x"), ("u1", "alice"))
        kept = await read_all(store, who, "x")
        forced = await store.put(who, "x", pieces(b"two"), decider("x", force=True), ("u1", "alice"))
        return first, again, kept, forced, await read_all(store, who, "x"), await store.list(who)
    first, again, kept, forced, now, listed = run(nats_url, scenario)
    assert (first[0], again[0], forced[0]) == (Verdict.CREATED, Verdict.UNCHANGED, Verdict.REPLACED)
    assert again[1].sequence == first[1].sequence  # nothing was written
    assert (kept, now) == (b"one", b"two")
    assert [m.name for m in listed] == ["x"]


def test_refused_and_unchanged_puts_leave_no_chunks_behind(nats_url):
    who = holder()

    async def scenario(store):
        await store.put(who, "x", pieces(b"one" * 1000), decider("x"), ("u1", "alice"))
        await store.put(who, "x", pieces(b"one" * 1000), decider("x"), ("u1", "alice"))
        with pytest.raises(Conflict):
            await store.put(who, "x", pieces(b"two" * 1000), decider("x"), ("u1", "alice"))
        await store.put(who, "x", pieces(b"three" * 1000), decider("x", True), ("u1", "alice"))
        from adapters.object_store import bucket_name
        bucket = bucket_name("test", who)
        info = await store.js.stream_info(f"OBJ_{bucket}", subjects_filter=f"$O.{bucket}.C.>")
        return info.state.subjects
    subjects = run(nats_url, scenario)
    assert len(subjects) == 1  # only the live object's chunks


def test_a_put_over_the_size_bound_is_refused_and_keeps_nothing(nats_url):
    who = holder()

    async def scenario(store):
        with pytest.raises(TooLarge, match="ROVING_OBJECT_MAX_BYTES"):
            await store.put(who, "big", pieces(b"x" * 5000), decider("big"), ("u1", "alice"))
        return await store.meta(who, "big"), await store.list(who)
    assert run(nats_url, scenario, max_bytes=4096) == (None, [])


def test_two_puts_of_one_name_at_once_end_with_one_object_and_one_conflict(nats_url):
    who = holder()

    async def scenario(store):
        results = await asyncio.gather(
            *(store.put(who, "race", pieces(content * 100_000), decider("race"), ("u1", "alice"))
              for content in (b"a", b"b")), return_exceptions=True)
        return results, await read_all(store, who, "race")
    results, content = run(nats_url, scenario)
    assert sorted(type(r).__name__ for r in results) == ["Conflict", "tuple"]
    winner = next(r for r in results if isinstance(r, tuple))
    assert content == (b"a" if winner[1].sha256 == hashlib.sha256(b"a" * 100_000).hexdigest() else b"b") * 100_000


def test_list_pages_through_names_by_prefix_and_skips_deleted(nats_url):
    who = holder()

    async def scenario(store):
        for name in ("b/2", "a/1", "b/1", "c"):
            await store.put(who, name, pieces(name.encode()), decider(name), ("u1", "alice"))
        deleted = await store.delete(who, "c", lambda meta: None)
        gone = await store.delete(who, "c", lambda meta: None)
        return deleted, gone, await store.list(who), await store.list(who, "b/"), await store.meta(who, "c")
    deleted, gone, listed, under_b, meta = run(nats_url, scenario)
    assert deleted is not None and gone is None and meta is None
    assert [m.name for m in listed] == ["a/1", "b/1", "b/2"]
    assert [m.name for m in under_b] == ["b/1", "b/2"]


def test_a_read_leaves_no_consumer_behind(nats_url):
    who = holder()

    async def scenario(store):
        await store.put(who, "x", pieces(os.urandom(20 * CHUNK)), decider("x"), ("u1", "alice"))
        assert len(await read_all(store, who, "x")) == 20 * CHUNK
        reader = store.read(who, await store.meta(who, "x"))
        await reader.__anext__()
        await reader.aclose()  # a client that went away mid-read
        from adapters.object_store import bucket_name
        return (await store.js.stream_info(f"OBJ_{bucket_name('test', who)}")).state.consumer_count
    assert run(nats_url, scenario) == 0


def test_a_holder_without_a_bucket_has_nothing(nats_url):
    async def scenario(store):
        who = holder()
        return await store.meta(who, "x"), await store.list(who)
    assert run(nats_url, scenario) == (None, [])


def test_reading_an_object_replaced_meanwhile_fails_rather_than_mixing_contents(nats_url, monkeypatch):
    monkeypatch.setattr(object_store, "FETCH_SECONDS", 0.5)
    who, size = holder(), 3 * object_store.READ_AHEAD * CHUNK

    async def scenario(store):
        await store.put(who, "x", pieces(b"1" * size), decider("x"), ("u1", "alice"))
        meta = await store.meta(who, "x")
        reader = store.read(who, meta)
        first = await reader.__anext__()
        await store.put(who, "x", pieces(b"2" * size), decider("x", True), ("u1", "alice"))
        with pytest.raises(Corrupt):
            async for _ in reader:
                pass
        return first
    assert run(nats_url, scenario) == b"1" * CHUNK


def test_the_store_runs_on_its_own_loop_and_serves_callers_on_another(nats_url):
    """As in the stack: the NATS connection on a loop thread, the HTTP server's coroutines awaiting it."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    nc = asyncio.run_coroutine_threadsafe(nats.connect(nats_url), loop).result(10)
    try:
        store = ObjectStore(nc.jetstream(), "test", 2**30, loop=loop)
        who, data = holder(), os.urandom(2 * CHUNK + 7)

        async def caller():
            await store.put(who, "cross", pieces(data), decider("cross"), ("u1", "alice"))
            return await read_all(store, who, "cross")
        assert asyncio.run(caller()) == data
    finally:
        asyncio.run_coroutine_threadsafe(nc.close(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()

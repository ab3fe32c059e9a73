"""The object store under puts and deletes at once, against a real nats-server: a put answered is never lost to a
delete that ran beside it, and puts at once by one holder stay within the holder's quota together."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator

import nats
import pytest

from adapters.object_ledger import PUTS_AT_ONCE, Busy, HolderLedger
from adapters.object_meta import ObjectMeta, Quota, meta_subject
from adapters.object_store import ObjectStore, QuotaExceeded, bucket_name
from domain.objects.access import Verdict
from tests.integration.test_object_store import decider, holder, pieces, read_all, run


def test_a_put_committed_between_a_deletes_tombstone_and_its_purge_keeps_its_object(nats_url):
    """The interleaving is driven: the put runs, whole, while the delete is about to purge the name's metadata."""
    who, first, second = holder(), b"old" * 50_000, b"new" * 60_000
    answered = []

    async def scenario(store: ObjectStore):
        await store.put(who, "x", pieces(first), decider("x"), ("u1", "alice"))
        purge, subject = store._purge, meta_subject(bucket_name("test", who), "x")

        async def purge_after_a_put(bucket, purged, *args, **kwargs):
            if purged == subject and not answered:
                answered.append(await store.put(who, "x", pieces(second), decider("x"), ("u1", "alice")))
            await purge(bucket, purged, *args, **kwargs)
        store._purge = purge_after_a_put
        deleted = await store.delete(who, "x", lambda meta: None)
        return deleted, await store.meta(who, "x"), await read_all(store, who, "x"), await store.usage(who)
    deleted, meta, content, (_, count) = run(nats_url, scenario)
    assert deleted is not None and deleted.size == len(first)
    assert answered[0][0] is Verdict.CREATED  # the name was free: the put was answered 201
    assert meta is not None and meta.sha256 == hashlib.sha256(second).hexdigest()
    assert content == second and count == 1


def gate(count: int, patience: float = 10.0):
    """Chunk streams that each give `first`, wait until all `count` have given theirs (or `patience` seconds, for
    puts refused before they read a byte), then give `rest`: every put has read its holder's use and is streaming
    before any commits."""
    arrived, everyone = [0], asyncio.Event()

    async def stream(first: bytes, rest: bytes) -> AsyncIterator[bytes]:
        yield first
        arrived[0] += 1
        if arrived[0] == count:
            everyone.set()
        await asyncio.wait([asyncio.ensure_future(everyone.wait())], timeout=patience)
        if rest:
            yield rest
    return stream


def outcome(results) -> tuple[list[ObjectMeta], list[BaseException]]:
    stored = [r[1] for r in results if isinstance(r, tuple)]
    return stored, [r for r in results if not isinstance(r, tuple)]


def test_puts_at_once_by_one_user_share_the_quota_rather_than_each_passing_it(nats_url):
    who, quota, half = holder(), Quota(bytes=2**20, objects=100), b"x" * 200_000
    stream = gate(4)

    async def scenario(store: ObjectStore):
        results = await asyncio.gather(*(
            store.put(who, f"f{n}", stream(half, half), decider(f"f{n}"), ("u1", "alice"), quota) for n in range(4)),
            return_exceptions=True)
        return results, await store.usage(who)
    results, (used, count) = run(nats_url, scenario)
    stored, refused = outcome(results)
    assert stored and all(isinstance(r, QuotaExceeded) and r.what == "bytes" for r in refused), results
    assert sum(m.size for m in stored) <= quota.bytes and used <= quota.bytes and count == len(stored)


def test_new_names_put_at_once_do_not_pass_the_object_count(nats_url):
    who, quota = holder(), Quota(bytes=2**30, objects=2)
    stream = gate(4, patience=1.0)  # two are refused as they begin, and never arrive

    async def scenario(store: ObjectStore):
        results = await asyncio.gather(*(
            store.put(who, f"f{n}", stream(b"a", b"b"), decider(f"f{n}"), ("u1", "alice"), quota) for n in range(4)),
            return_exceptions=True)
        return results, await store.usage(who)
    results, (_, count) = run(nats_url, scenario)
    stored, refused = outcome(results)
    assert len(stored) == 2 == count and all(getattr(r, "what", None) == "objects" for r in refused), results


def test_puts_from_two_api_processes_at_once_are_stored_whole_or_refused_within_the_quota(nats_url):
    """Two stores, as two API processes: neither's ledger sees the other's put; the re-check before commit does."""
    who, quota, part = holder(), Quota(bytes=2**20, objects=100), b"y" * 350_000
    stream = gate(2)

    async def main():
        connections = [await nats.connect(nats_url) for _ in range(2)]
        try:
            stores = [ObjectStore(nc.jetstream(), "test", 2**30) for nc in connections]
            results = await asyncio.gather(*(
                store.put(who, f"p{n}", stream(part, part), decider(f"p{n}"), ("u1", "alice"), quota)
                for n, store in enumerate(stores)), return_exceptions=True)
            return results, await stores[0].usage(who)
        finally:
            for nc in connections:
                await nc.close()
    results, (used, count) = asyncio.run(main())
    stored, refused = outcome(results)
    assert all(isinstance(r, QuotaExceeded) for r in refused), results
    assert used <= quota.bytes and count == len(stored) and sum(m.size for m in stored) <= quota.bytes


def test_a_holder_has_at_most_a_few_puts_running_and_another_holder_is_not_held_up(nats_url):
    who, other = holder(), holder()
    stream = gate(PUTS_AT_ONCE + 1)

    async def scenario(store: ObjectStore):
        running = [asyncio.ensure_future(store.put(who, f"f{n}", stream(b"a", b""), decider(f"f{n}"), ("u1", "alice")))
                   for n in range(PUTS_AT_ONCE)]
        while store.ledger.holders.get(bucket_name("test", who), HolderLedger()).puts < PUTS_AT_ONCE:
            await asyncio.sleep(0.01)
        with pytest.raises(Busy, match=f"at most {PUTS_AT_ONCE} puts at once"):
            await store.put(who, "one-more", pieces(b"z"), decider("one-more"), ("u1", "alice"))
        elsewhere = await store.put(other, "g", stream(b"b", b""), decider("g"), ("u2", "bob"))  # opens the gate
        return [await put for put in running], elsewhere, await store.list(who)
    done, elsewhere, listed = run(nats_url, scenario)
    assert len(done) == PUTS_AT_ONCE and elsewhere[0] is Verdict.CREATED
    assert [m.name for m in listed] == [f"f{n}" for n in range(PUTS_AT_ONCE)]  # the refused one kept nothing

"""The object store under puts and deletes at once, against a real nats-server: a put answered is never lost to a
delete that ran beside it, and puts at once by one holder stay within the holder's quota together."""

from __future__ import annotations

import hashlib

from adapters.object_meta import meta_subject
from adapters.object_store import ObjectStore, bucket_name
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

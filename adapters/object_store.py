"""People's objects in JetStream's object store: one bucket per holder (a user or a group), streamed in and out.

The layout is nats-py's own (and the `nats` CLI's): chunks on `$O.<bucket>.C.<nuid>`, each object's metadata, a
JSON ObjectInfo, the last message on `$O.<bucket>.M.<base64 name>`. Two things are ours:

- a put streams its chunks to a fresh nuid first, then commits by publishing the metadata with the sequence of
  the metadata it decided against (`Nats-Expected-Last-Subject-Sequence`), so two puts of one name at once cannot
  both win: the loser reloads and decides again (unchanged, conflict or replace). Chunks of a put that does not
  commit are purged, and so are the replaced object's once the new one is in place;
- a holder's bucket is held to its `Quota`: its bytes (as the stream stores them) and its count of live objects, and
  all holders' buckets together to `store_bytes`, so objects cannot take the room the log needs. A put reads the use
  as it begins; the puts running in this process hold their bytes and new names in a `Ledger` as they stream, so puts
  at once share the room rather than each seeing all of it, and at most PUTS_AT_ONCE run per holder (Busy past it).
  Before it commits, a put reads its holder's use again, its own chunks in it: puts of another API process, which
  the ledger does not see, can together pass a holder's bytes only by the metadata they add, its count by one object
  per other process racing on the last place. The store total is read at most every STORE_SECONDS and is not re-checked at
  commit: across processes it may be passed by what their puts stream in that time. A put past any is QuotaExceeded
  with the figures;
- chunks are read through a pull consumer, a few at a time, asked for when the reader has taken the last: a
  multi-gigabyte object passes through in 128 KiB pieces (at most 1 MiB of it held), and a slow HTTP client slows
  the read instead of filling memory. Puts keep at most 1 MiB of chunks awaiting their acks.

With `loop` given (the stack's connection loop), every public method runs there and may be awaited from another
loop (uvicorn's): `adapters.loop_bridge`.
"""

from __future__ import annotations

import asyncio
import builtins  # `list` is also a method here
import hashlib
import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from typing import Any

import nats.errors
import nats.js.api
import nats.js.errors
from nats.js.api import AckPolicy, DeliverPolicy, Header
from nats.nuid import NUID

from adapters.jetstream.replicas import hold_replicas
from adapters.loop_bridge import on_loop, pulled
from adapters.object_ledger import Ledger, Slot
from adapters.object_meta import (
    UPLOADER,
    UPLOADER_NAME,
    ObjectMeta,
    Quota,
    bucket_name,
    digest_text,
    meta_of,
    meta_subject,
)
from domain.objects.access import Holder, Verdict

CHUNK = 128 * 1024
WINDOW = 8  # chunk publishes awaiting their acks at once: 1 MiB in flight
READ_AHEAD = 8  # chunks a read asks for at once: 1 MiB waiting for a slow reader, no more
ACK_SECONDS = FETCH_SECONDS = 10.0
WRONG_LAST_SEQUENCE = {10071}
NO_STORAGE = {10047}  # "insufficient storage resources available": the server's own store is full
STORE_SECONDS = 5.0  # how stale the sum of every bucket's bytes may be (it lists every holder's stream)
Decide = Callable[["ObjectMeta | None", str], Verdict]
Room = Callable[[int], None]  # raises when a put of that many bytes so far may not go on


class TooLarge(Exception):
    """A put over the size bound; nothing of it is kept."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"an object is at most {limit:,} bytes (ROVING_OBJECT_MAX_BYTES)")
        self.limit = limit


class QuotaExceeded(Exception):
    """A put past a quota (`what`: "bytes", "objects" or "store bytes"), with its figures; nothing of it is kept."""

    def __init__(self, what: str, used: int, limit: int) -> None:
        super().__init__(f"{what}: {used:,} used of {limit:,}")
        self.what, self.used, self.limit = what, used, limit


class Corrupt(Exception):
    """An object whose chunks no longer add up to its metadata (replaced while being read, or damaged)."""


class ObjectStore:
    def __init__(self, js: Any, cluster: str, max_bytes: int, loop: asyncio.AbstractEventLoop | None = None,
                 replicas: int = 1) -> None:
        self.js, self.cluster, self.max_bytes, self.loop, self.replicas = js, cluster, max_bytes, loop, replicas
        self._made: set[str] = set()
        self._store_seen = (-STORE_SECONDS, 0, 0)  # (when, every bucket's bytes then, ledger's store_committed then)
        self.ledger = Ledger()

    async def meta(self, holder: Holder, name: str) -> ObjectMeta | None:
        return await on_loop(self.loop, self._meta(bucket_name(self.cluster, holder), name))

    async def put(self, holder: Holder, name: str, chunks: AsyncIterator[bytes], decide: Decide,
                  uploader: tuple[str, str], quota: Quota | None = None) -> tuple[Verdict, ObjectMeta]:
        """Stream `chunks` in, then commit unless `decide` (given what is there and the new digest) says it is
        unchanged or raises; (verdict, the object's metadata now). QuotaExceeded past `quota`."""
        source = pulled(None, chunks) if self.loop is None else pulled(asyncio.get_running_loop(), chunks)
        bucket = bucket_name(self.cluster, holder)
        return await on_loop(self.loop, self._put(bucket, name, source, decide, uploader, quota))

    async def usage(self, holder: Holder) -> tuple[int, int]:
        """(bytes, live objects) the holder's bucket holds now."""
        return await on_loop(self.loop, self._usage(bucket_name(self.cluster, holder)))

    async def read(self, holder: Holder, meta: ObjectMeta) -> AsyncIterator[bytes]:
        """The object's bytes in chunks, checked against its digest at the end (Corrupt if they do not match)."""
        async with aclosing(pulled(self.loop, self._read(bucket_name(self.cluster, holder), meta))) as chunks:
            async for chunk in chunks:  # a reader that stops early closes them: the read's consumer goes at once
                yield chunk

    async def list(self, holder: Holder, prefix: str = "") -> list[ObjectMeta]:
        """Every live object whose name starts with `prefix`, by name."""
        return await on_loop(self.loop, self._list(bucket_name(self.cluster, holder), prefix))

    async def delete(self, holder: Holder, name: str, check: Callable[[ObjectMeta], None]) -> ObjectMeta | None:
        """Deletes the object if `check` (given its metadata) does not raise; None if there was none."""
        return await on_loop(self.loop, self._delete(bucket_name(self.cluster, holder), name, check))

    # on the connection's loop from here on

    async def _meta(self, bucket: str, name: str) -> ObjectMeta | None:
        try:
            raw = await self.js.get_msg(f"OBJ_{bucket}", subject=meta_subject(bucket, name), direct=True)
        except (nats.js.errors.NotFoundError, nats.errors.NoRespondersError):
            return None  # no such object, or no bucket yet (a direct get has no stream to answer it)
        info = json.loads(raw.data or b"{}")
        if info.get("deleted"):
            return None
        return meta_of(info, int(raw.seq or 0))

    async def _put(self, bucket: str, name: str, chunks: AsyncIterator[bytes], decide: Decide,
                   uploader: tuple[str, str], quota: Quota | None) -> tuple[Verdict, ObjectMeta]:
        await self._ensure(bucket)
        with self.ledger.slot(bucket) as slot:
            room = await self._room(bucket, name, quota, slot)
            nuid = NUID().next().decode()
            subject = f"$O.{bucket}.C.{nuid}"
            try:
                try:
                    size, count, sha = await self._write_chunks(subject, chunks, room)
                except nats.js.errors.APIError as error:
                    if error.err_code not in NO_STORAGE:
                        raise
                    raise QuotaExceeded("store bytes", 0, quota.store_bytes if quota else 0) from None
                return await self._commit(bucket, name, nuid, (size, count, digest_text(sha)), decide, uploader,
                                          (quota, slot))
            except BaseException:
                await asyncio.shield(self._purge(bucket, subject))
                raise

    async def _room(self, bucket: str, name: str, quota: Quota | None, slot: Slot) -> Room:
        """What bounds this put's bytes: the object size bound, the holder's room and the store's, less what the
        other puts in flight here hold. A new name past the holder's count is refused here, before a byte is read."""
        if quota is None:
            return self._within_bound
        used, count = await self._usage(bucket)
        if count + slot.holder.new_names < quota.objects:
            slot.adds_name()  # perhaps a name already there: held as new only while the put runs
        elif await self._meta(bucket, name) is None:
            raise QuotaExceeded("objects", count + slot.holder.new_names, quota.objects)
        store_used, committed_then = await self._store_used() if quota.store_bytes else (0, 0)

        def room(size: int) -> None:
            self._within_bound(size)
            if (held := used + slot.ahead() + size) > quota.bytes:
                raise QuotaExceeded("bytes", held, quota.bytes)
            if quota.store_bytes and (total := store_used + slot.store_ahead(committed_then) + size) > quota.store_bytes:
                raise QuotaExceeded("store bytes", total, quota.store_bytes)
            slot.grow(size)
        room(0)
        return room

    async def _recheck(self, bucket: str, quota: Quota, new_name: bool) -> None:
        """The holder's use as stored, this put's chunks in it, just before it commits: what puts of another process
        stored meanwhile (the ledger sees only this one's) is in it."""
        used, count = await self._usage(bucket)
        if used > quota.bytes:
            raise QuotaExceeded("bytes", used, quota.bytes)
        if new_name and count >= quota.objects:
            raise QuotaExceeded("objects", count, quota.objects)

    def _within_bound(self, size: int) -> None:
        if size > self.max_bytes:
            raise TooLarge(self.max_bytes)

    async def _usage(self, bucket: str) -> tuple[int, int]:
        try:
            state = (await self.js.stream_info(f"OBJ_{bucket}", subjects_filter=f"$O.{bucket}.M.>")).state
        except nats.js.errors.NotFoundError:
            return 0, 0
        return int(state.bytes or 0), len(state.subjects or {})

    async def _store_used(self) -> tuple[int, int]:
        """Every holder's bucket's bytes together, listed at most every STORE_SECONDS, and the ledger's
        store_committed as they were listed (what this process committed since is not in them)."""
        seen, total, committed_then = self._store_seen
        if time.monotonic() - seen < STORE_SECONDS:
            return total, committed_then
        prefix, total, offset, committed_then = f"OBJ_ROVING_OBJ_{self.cluster}_", 0, 0, self.ledger.store_committed
        while page := await self.js.streams_info(offset=offset):
            total += sum(int(i.state.bytes or 0) for i in page if i.config.name and i.config.name.startswith(prefix))
            offset += len(page)
        self._store_seen = (time.monotonic(), total, committed_then)
        return total, committed_then

    async def _write_chunks(self, subject: str, chunks: AsyncIterator[bytes], room: Room) -> tuple[int, int, bytes]:
        """Chunks published in order on one connection, up to WINDOW awaiting their acks (about twice the rate of
        one at a time); every ack is in before the put commits."""
        size, count, sha, pending = 0, 0, hashlib.sha256(), bytearray()
        acks: list[asyncio.Future] = []

        async def send(data: bytes) -> None:
            acks.append(await self.js.publish_async(subject, data))
            if len(acks) >= WINDOW:
                await asyncio.wait_for(acks.pop(0), ACK_SECONDS)

        try:
            async for piece in chunks:
                size += len(piece)
                room(size)
                sha.update(piece)
                pending += piece
                while len(pending) >= CHUNK:
                    await send(bytes(pending[:CHUNK]))
                    del pending[:CHUNK]
                    count += 1
            if pending:
                await send(bytes(pending))
                count += 1
            for ack in acks:
                await asyncio.wait_for(ack, ACK_SECONDS)
        finally:
            for ack in acks:  # a put that failed leaves none of its acks unread
                ack.cancel()
        return size, count, sha.digest()

    async def _commit(self, bucket: str, name: str, nuid: str, written: tuple[int, int, str], decide: Decide,
                      uploader: tuple[str, str], held: tuple[Quota | None, Slot]) -> tuple[Verdict, ObjectMeta]:
        """Decide against what is there now, re-check the quota and publish the metadata expecting what was there;
        a put that lands between the two makes the publish fail, and this decides again against that one."""
        (size, count, digest), (quota, slot) = written, held
        while True:
            existing = await self._meta_any(bucket, name)
            live = existing[0] if existing and not existing[1] else None
            verdict = decide(live, digest)
            if verdict is Verdict.UNCHANGED and live is not None:
                await self._purge(bucket, f"$O.{bucket}.C.{nuid}")
                return verdict, live
            if quota is not None:
                await self._recheck(bucket, quota, live is None)
            info = {"name": name, "bucket": bucket, "nuid": nuid, "size": size, "chunks": count, "digest": digest,
                    "mtime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "headers": {UPLOADER: [uploader[0]], UPLOADER_NAME: [uploader[1]]}}
            expected = existing[0].sequence if existing else 0
            try:
                ack = await self.js.publish(meta_subject(bucket, name), json.dumps(info).encode(), headers={
                    Header.ROLLUP: "sub", "Nats-Expected-Last-Subject-Sequence": str(expected)})
            except nats.js.errors.APIError as error:
                if error.err_code in WRONG_LAST_SEQUENCE:
                    continue
                raise
            slot.committed()
            if live is not None:
                await self._purge(bucket, f"$O.{bucket}.C.{live.nuid}")
            return verdict, meta_of(info, ack.seq)

    async def _meta_any(self, bucket: str, name: str) -> tuple[ObjectMeta, bool] | None:
        """The last metadata message of `name`, deleted ones too (a commit expects its sequence), and if deleted."""
        try:
            raw = await self.js.get_msg(f"OBJ_{bucket}", subject=meta_subject(bucket, name), direct=True)
        except nats.js.errors.NotFoundError:
            return None
        info = json.loads(raw.data or b"{}")
        return meta_of(info, int(raw.seq or 0)), bool(info.get("deleted"))

    async def _read(self, bucket: str, meta: ObjectMeta) -> AsyncIterator[bytes]:
        """Through a pull consumer of the object's chunks, READ_AHEAD at a time: at most that many wait in memory,
        and the next batch is asked for only when the reader has taken these."""
        stream, subject, sha, seen = f"OBJ_{bucket}", f"$O.{bucket}.C.{meta.nuid}", hashlib.sha256(), 0
        if not meta.chunks:
            sub = None
        else:
            sub = await self.js.pull_subscribe(subject, stream=stream, config=nats.js.api.ConsumerConfig(
                ack_policy=AckPolicy.NONE, deliver_policy=DeliverPolicy.ALL, inactive_threshold=30.0,
                mem_storage=True))
        try:
            remaining = meta.chunks
            while remaining and sub is not None:
                try:
                    batch = await sub.fetch(min(READ_AHEAD, remaining), timeout=FETCH_SECONDS)
                except TimeoutError:  # nats-py's own, or asyncio's when a fetch's deadline runs out before its request
                    raise Corrupt(f"{meta.name}: chunks are missing (replaced or deleted while being read)") from None
                for msg in batch:
                    sha.update(msg.data)
                    seen += len(msg.data)
                    yield msg.data
                remaining -= len(batch)
        finally:
            if sub is not None:
                await self._drop(stream, sub)
        if seen != meta.size or digest_text(sha.digest()) != meta.digest:
            raise Corrupt(f"{meta.name}: its chunks do not match its digest")

    async def _drop(self, stream: str, sub: Any) -> None:
        """The read's consumer goes now (else the server drops it after 30 s idle)."""
        try:
            info = await sub.consumer_info()
            await sub.unsubscribe()
            await self.js.delete_consumer(stream, info.name)
        except (nats.errors.Error, nats.js.errors.Error):
            pass

    async def _list(self, bucket: str, prefix: str) -> builtins.list[ObjectMeta]:
        stream = f"OBJ_{bucket}"
        try:
            state = (await self.js.stream_info(stream, subjects_filter=f"$O.{bucket}.M.>")).state
        except nats.js.errors.NotFoundError:
            return []
        wanted = len(state.subjects or {})
        if not wanted:
            return []
        found: list[ObjectMeta] = []
        sub = await self.js.subscribe(f"$O.{bucket}.M.>", stream=stream, ordered_consumer=True,
                                      deliver_policy=DeliverPolicy.LAST_PER_SUBJECT)
        try:
            for _ in range(wanted):
                msg = await sub.next_msg(timeout=10)
                info = json.loads(msg.data or b"{}")
                if not info.get("deleted") and str(info.get("name", "")).startswith(prefix):
                    found.append(meta_of(info, msg.metadata.sequence.stream))
                if msg.metadata.num_pending == 0:
                    break
        finally:
            await sub.unsubscribe()
        return sorted(found, key=lambda m: m.name)

    async def _delete(self, bucket: str, name: str, check: Callable[[ObjectMeta], None]) -> ObjectMeta | None:
        while True:
            existing = await self._meta_any(bucket, name)
            if existing is None or existing[1]:
                return None
            meta = existing[0]
            check(meta)
            info = {"name": name, "bucket": bucket, "nuid": meta.nuid, "size": 0, "chunks": 0, "digest": "",
                    "deleted": True, "mtime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
            try:
                tombstone = await self.js.publish(meta_subject(bucket, name), json.dumps(info).encode(), headers={
                    Header.ROLLUP: "sub", "Nats-Expected-Last-Subject-Sequence": str(meta.sequence)})
            except nats.js.errors.APIError as error:
                if error.err_code in WRONG_LAST_SEQUENCE:
                    continue
                raise
            await self._purge(bucket, f"$O.{bucket}.C.{meta.nuid}")
            # The tombstone goes too (the meta subjects count only live objects), but nothing after it: a put that
            # committed since was answered, and its metadata is all that points at its chunks.
            await self._purge(bucket, meta_subject(bucket, name), before=tombstone.seq + 1)
            return meta

    async def _ensure(self, bucket: str) -> None:
        """The holder's bucket, made on its first put (the server answers an existing one as it is).

        Its stream has no `max_bytes`: JetStream reserves a stream's max_bytes from the server's storage as it is
        made, so every holder's quota reserved would refuse new buckets long before the disk is used (10047)."""
        if bucket in self._made:
            return
        try:
            await hold_replicas(self.js, f"OBJ_{bucket}", self.replicas)
        except nats.js.errors.NotFoundError:
            await self.js.create_object_store(bucket, config=nats.js.api.ObjectStoreConfig(
                bucket=bucket, description="roving objects", replicas=self.replicas,
                storage=nats.js.api.StorageType.FILE))
        self._made.add(bucket)

    async def _purge(self, bucket: str, subject: str, before: int | None = None) -> None:
        """The subject's messages (only those with a sequence below `before`, if given)."""
        try:
            await self.js.purge_stream(f"OBJ_{bucket}", subject=subject, seq=before)
        except nats.js.errors.Error:
            pass  # a leftover chunk subject costs space, never correctness: no metadata points at it

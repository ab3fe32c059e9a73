"""Built images in JetStream's object store (bucket ROVING_IMAGES): the image tars, and the names people use.

`image/<key>-<built>` holds one built root filesystem as a tar, `key` being the sha256 of its build recipe and
its base image's digest, `built` when (a build after the ttl ran out is a new object: nothing is ever
overwritten, so an agent needs no right to purge). `ref/user/<owner>/<name>` and `ref/group/<group>/<name>`
name the newest build of an image for its owner or for its group: meta-only entries (no chunks), written with a
rollup so a new build replaces the old name without the purge right an agent does not have. Entries carry a
JSON description: the key, the object, when it was built, by whom, its scope and its ttl.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import secrets
import time
from dataclasses import dataclass
from typing import IO, Any

import nats
import nats.js.api
import nats.js.errors
from nats.nuid import NUID

from adapters.jetstream.replicas import hold_replicas
from adapters.nats_tls import connect_options

BUCKET = "ROVING_IMAGES"
STREAM = f"OBJ_{BUCKET}"
EMPTY_DIGEST = "SHA-256=" + base64.urlsafe_b64encode(hashlib.sha256(b"").digest()).decode()


class ImageNotFound(LookupError):
    """No image by that name for this owner (or their group), or it outlived its ttl."""


@dataclass(frozen=True)
class Entry:
    """What an image's name points at."""

    key: str  # the recipe's: sha256 of the build plan and the base image's digest
    object: str  # the object holding the tar
    built: float  # epoch seconds
    owner: str
    scope: str
    ttl_seconds: float | None = None

    def expired(self, now: float) -> bool:
        return self.ttl_seconds is not None and now > self.built + self.ttl_seconds

    def text(self) -> str:
        return json.dumps({"key": self.key, "object": self.object, "built": self.built, "owner": self.owner, "scope": self.scope,
                           "ttl_seconds": self.ttl_seconds}, sort_keys=True)

    @classmethod
    def of(cls, text: str | None) -> Entry | None:
        try:
            found = json.loads(text or "")
            return cls(str(found["key"]), str(found["object"]), float(found["built"]), str(found["owner"]), str(found["scope"]),
                       found.get("ttl_seconds"))
        except (ValueError, KeyError, TypeError):
            return None


def image_object(key: str, built: float) -> str:
    """A new name for each build: two builds of one recipe in the same second (a user's image, then its group's)
    would otherwise put the same object twice, and replacing one purges its old chunks, which an agent may not."""
    return f"image/{key}-{int(built)}-{secrets.token_hex(4)}"


def ref_object(scope: str, holder: str, name: str) -> str:
    return f"ref/{scope}/{holder}/{name}"


async def ensure_bucket(js: Any, replicas: int = 1) -> None:
    """The control plane makes the bucket (an agent may only use it)."""
    try:
        await js.object_store(BUCKET)
    except nats.js.errors.BucketNotFoundError:
        await js.create_object_store(BUCKET, config=nats.js.api.ObjectStoreConfig(
            bucket=BUCKET, description="images built by workflows", replicas=replicas,
            storage=nats.js.api.StorageType.FILE))
        return
    await hold_replicas(js, f"OBJ_{BUCKET}", replicas)


class ImageStore:
    """One connection's view of the bucket: look names up, fetch and store image tars."""

    def __init__(self, nc: Any) -> None:
        self.nc, self.js = nc, nc.jetstream()
        self.store: Any = None

    @classmethod
    async def connect(cls, url: str) -> ImageStore:
        nc = await nats.connect(**connect_options(url), connect_timeout=5, max_reconnect_attempts=3)
        store = cls(nc)
        try:
            store.store = await store.js.object_store(BUCKET)
        except Exception:
            await nc.close()
            raise
        return store

    async def close(self) -> None:
        await self.nc.close()

    async def entry(self, name: str) -> Entry | None:
        try:
            info = await self.store.get_info(name)
        except nats.js.errors.ObjectNotFoundError:
            return None
        return Entry.of(info.description)

    async def resolve(self, name: str, owner: str, group: str, now: float | None = None) -> Entry:
        """The newest live build of `name` the owner may use: their own, else their group's."""
        now = time.time() if now is None else now
        places = [ref_object("user", owner, name)] + ([ref_object("group", group, name)] if group else [])
        for place in places:
            entry = await self.entry(place)
            if entry is not None and not entry.expired(now):
                return entry
        whose = f"user {owner}" + (f" or group {group}" if group else "")
        raise ImageNotFound(f"image fuzzball://user/{name}: no live build of it for {whose} "
                            "(build it in a workflow's `images:` first)")

    async def cached(self, place: str, key: str, now: float | None = None) -> Entry | None:
        """The live build `place` names when it was made from the recipe `key` and its tar is still there."""
        entry = await self.entry(place)
        if entry is None or entry.key != key or entry.expired(time.time() if now is None else now):
            return None
        return entry if await self.entry(entry.object) is not None else None

    async def put_image(self, entry: Entry, tar: IO[bytes]) -> int:
        """Stores the tar as `entry.object`; returns its size."""
        meta = nats.js.api.ObjectMeta(name=entry.object, description=entry.text())
        info = await self.store.put(entry.object, tar, meta=meta)
        return int(info.size)

    async def fetch_image(self, entry: Entry, into: IO[bytes]) -> None:
        """The tar's chunks in order into `into`, checked against its digest. (nats-py's own `get` first asks
        the server for every stream's name, which an agent may not.)"""
        info = await self.store.get_info(entry.object)
        if not info.size:
            return
        sub = await self.js.subscribe(f"$O.{BUCKET}.C.{info.nuid}", stream=STREAM, ordered_consumer=True)
        digest = hashlib.sha256()
        try:
            async for msg in sub.messages:
                await asyncio.to_thread(into.write, msg.data)
                digest.update(msg.data)
                if msg.metadata.num_pending == 0:
                    break
        finally:
            await sub.unsubscribe()
        expected = (info.digest or "").split("=", 1)[-1]
        if base64.urlsafe_b64encode(digest.digest()).decode() != expected:
            raise ImageNotFound(f"built image {entry.object}: its chunks do not match its digest")

    async def name(self, place: str, entry: Entry) -> None:
        """Points `place` (ref/...) at `entry`: a meta-only object, rolled up over the previous one."""
        info = nats.js.api.ObjectInfo(name=place, bucket=BUCKET, nuid=NUID().next().decode(), size=0,
                                      chunks=0, digest=EMPTY_DIGEST, description=entry.text(),
                                      mtime=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        subject = f"$O.{BUCKET}.M.{base64.urlsafe_b64encode(place.encode()).decode()}"
        await self.js.publish(subject, json.dumps(info.as_dict()).encode(),
                              headers={nats.js.api.Header.ROLLUP: "sub"})

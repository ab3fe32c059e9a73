"""Images built by workflows (`fuzzball://user/NAME`) in the node's image cache: looked up by name for the job's
owner (or their group) in the object store, fetched once, unpacked like a pulled image and shared the same way.

A built image lives in the cache as `images/built-<key>-<built>/rootfs`: a new build of the name is a new entry,
and old ones leave by the cache's own least-recently-used eviction.
"""

from __future__ import annotations

import asyncio
import dataclasses
import fcntl
import os
import shutil
import tempfile
import time
from pathlib import Path

from adapters.object_cache import Entry, ImageNotFound, ImageStore
from adapters.runtime.images import ImageCache, Pulled, _tree_bytes
from adapters.runtime.layers import LayerError, apply_layer
from adapters.runtime.registry import ImageError
from domain.fuzzfile.images import USER_PREFIX, referenced_image


def local_digest(entry: Entry) -> str:
    return f"built-{entry.key}-{int(entry.built)}"


class BuiltImages:
    """Resolves and unpacks built images into `cache`; `url` reaches the object store (the agent role's)."""

    def __init__(self, cache: ImageCache, url: str | None = None) -> None:
        self.cache, self.url = cache, url

    def rootfs(self, image: str, owner: str, group: str) -> Pulled:
        """The unpacked root of `image` for a job of `owner` (member of `group`), held in use until released."""
        name = referenced_image(image)
        if name is None:
            raise ImageError(f"image {image}: built images are named {USER_PREFIX}NAME")
        if not self.url:
            raise ImageError(f"image {image}: this node has no connection to the image store")
        return asyncio.run(self._rootfs(name, owner, group))

    async def _rootfs(self, name: str, owner: str, group: str) -> Pulled:
        store = await ImageStore.connect(self.url or "")
        try:
            try:
                entry = await store.resolve(name, owner, group)
            except ImageNotFound as error:
                raise ImageError(str(error)) from error
            return await self.unpacked(store, entry)
        finally:
            await store.close()

    async def unpacked(self, store: ImageStore, entry: Entry) -> Pulled:
        """`entry`'s root from the cache, fetched and unpacked first when this node does not have it."""
        digest = local_digest(entry)
        if (held := self.cache.hold(digest)) is not None:
            return held
        started = time.monotonic()
        with open(self.cache.directory / "locks" / f"{digest}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if (held := self.cache.hold(digest)) is not None:
                return held
            scratch = Path(tempfile.mkdtemp(dir=self.cache.directory / "tmp"))
            try:
                tar = scratch / "image.tar"
                with open(tar, "wb") as into:
                    await store.fetch_image(entry, into)
                rootfs = scratch / "rootfs"
                rootfs.mkdir(mode=0o755)
                try:
                    apply_layer(tar, rootfs)
                except (LayerError, OSError) as error:
                    raise ImageError(f"built image {entry.object} cannot be unpacked: {error}") from error
                self.install(rootfs, entry)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
        held = self.cache.hold(digest)
        if held is None:
            raise ImageError(f"built image {entry.object} left the cache as it was unpacked; try again")
        return dataclasses.replace(held, seconds=time.monotonic() - started)

    def install(self, rootfs: Path, entry: Entry) -> None:
        """Moves an unpacked (or just built) root into the cache under `entry`'s name."""
        target = self.cache.directory / "images" / local_digest(entry)
        target.mkdir(mode=0o711, exist_ok=True)
        (target / "size").write_text(str(_tree_bytes(rootfs)))
        try:
            os.rename(rootfs, target / "rootfs")
        except OSError:  # another job's fetch got there first: theirs is as good
            pass

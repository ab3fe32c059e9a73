"""An in-memory stand-in for adapters.object_store.ObjectStore, for route tests that run without a nats-server
(the real store is tested against one in tests/integration/test_object_store.py and test_object_routes.py)."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import AsyncIterator, Callable

from adapters.object_store import ObjectMeta, TooLarge
from domain.objects.access import Holder, Verdict


class MemoryObjects:
    def __init__(self, max_bytes: int = 2**20) -> None:
        self.max_bytes = max_bytes
        self.kept: dict[tuple[Holder, str], tuple[ObjectMeta, bytes]] = {}
        self.sequence = 0

    async def meta(self, holder: Holder, name: str) -> ObjectMeta | None:
        found = self.kept.get((holder, name))
        return found[0] if found else None

    async def put(self, holder: Holder, name: str, chunks: AsyncIterator[bytes], decide: Callable,
                  uploader: tuple[str, str], quota: object = None) -> tuple[Verdict, ObjectMeta]:
        """As the real store's, without its quota (tests/integration/test_object_quota.py tests that)."""
        data = b"".join([chunk async for chunk in chunks])
        if len(data) > self.max_bytes:
            raise TooLarge(self.max_bytes)
        digest = "SHA-256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode()
        existing = await self.meta(holder, name)
        verdict = decide(existing, digest)
        if verdict is Verdict.UNCHANGED and existing is not None:
            return verdict, existing
        self.sequence += 1
        meta = ObjectMeta(name=name, size=len(data), digest=digest, modified="2026-01-01T00:00:00Z",
                          uploaded_by=uploader[0], uploaded_by_name=uploader[1], chunks=1, sequence=self.sequence)
        self.kept[(holder, name)] = (meta, data)
        return verdict, meta

    async def read(self, holder: Holder, meta: ObjectMeta) -> AsyncIterator[bytes]:
        yield self.kept[(holder, meta.name)][1]

    async def list(self, holder: Holder, prefix: str = "") -> list[ObjectMeta]:
        return sorted((m for (h, name), (m, _) in self.kept.items() if h == holder and name.startswith(prefix)),
                      key=lambda m: m.name)

    async def delete(self, holder: Holder, name: str, check: Callable[[ObjectMeta], None]) -> ObjectMeta | None:
        found = self.kept.get((holder, name))
        if found is None:
            return None
        check(found[0])
        del self.kept[(holder, name)]
        return found[0]

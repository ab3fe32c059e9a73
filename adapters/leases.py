"""Leases in JetStream KV with a TTL: the scheduler's leader lease and each node's heartbeat lease.

Heartbeats are not events: a node's lease is a KV entry the agent's heartbeat refreshes; when it lapses
(the bucket's max age passes without a write) the leader turns that into a `NodeWentOffline` event.
"""

from __future__ import annotations

from typing import Any

import nats.js.errors
from nats.js.api import KeyValueConfig, StorageType

from adapters.jetstream.connection import Connection
from adapters.jetstream.refusals import TRANSIENT
from adapters.jetstream.replicas import hold_replicas

LEADER_KEY = "scheduler-leader"
REFUSED = (nats.js.errors.KeyWrongLastSequenceError, nats.js.errors.BadRequestError, nats.js.errors.APIError)


class Leases:
    def __init__(self, connection: Connection, ttl: float = 10.0) -> None:
        self.connection = connection
        self.ttl = ttl
        self.bucket = f"roving_{connection.names.cluster.replace('-', '_')}_leases"
        self._kv = connection.run(self._open)
        self._leader_revision: int | None = None

    async def _open(self):
        js = self.connection.client.js
        try:
            kv = await js.key_value(self.bucket)
        except nats.js.errors.BucketNotFoundError:
            config = KeyValueConfig(bucket=self.bucket, ttl=self.ttl, storage=StorageType.FILE,
                                    replicas=self.connection.replicas)
            return await js.create_key_value(config)
        await hold_replicas(js, f"KV_{self.bucket}", self.connection.replicas)
        return kv

    def touch(self, node: str, value: str = "alive") -> None:
        self.connection.run(lambda: self._kv.put(_key(node), value.encode()))

    def alive(self, node: str) -> bool:
        async def get() -> bool:
            try:
                entry = await self._kv.get(_key(node))
            except nats.js.errors.KeyNotFoundError:
                return False
            return entry is not None and entry.value is not None
        return self.connection.run(get)

    def announce(self, name: str, value: str) -> None:
        """Say where something runs (e.g. the audit's owner); it lapses one TTL after the last announcement."""
        self.connection.run(lambda: self._kv.put(_announcement(name), value.encode()))

    def announced(self, name: str) -> str | None:
        """What was last announced for `name`, while it has not lapsed."""
        async def get() -> str | None:
            try:
                entry = await self._kv.get(_announcement(name))
            except nats.js.errors.KeyNotFoundError:
                return None
            return entry.value.decode() if entry is not None and entry.value else None
        return self.connection.run(get)

    def hold_leadership(self, holder: str) -> bool:
        """Take the leader lease if free, or renew it if ours; False while another holder's lease lives."""
        try:
            return self.connection.run(lambda: self._claim(holder))
        except TRANSIENT:
            return False

    async def _claim(self, holder: str) -> bool:
        self._leader_revision = await claim(self._kv, LEADER_KEY, holder, self._leader_revision)
        return self._leader_revision is not None


class NamedLease:
    """A lease of its own in the leases bucket (e.g. one provisioner's provider): held by one holder at a time,
    renewed by holding it again within the bucket's TTL, free for another once that lapses."""

    def __init__(self, leases: Leases, name: str) -> None:
        self.leases, self.key = leases, "lease." + name.replace(".", "_")
        self._revision: int | None = None

    def hold(self, holder: str) -> bool:
        try:
            return self.leases.connection.run(lambda: self._claim(holder))
        except TRANSIENT:
            self._revision = None
            return False

    async def _claim(self, holder: str) -> bool:
        self._revision = await claim(self.leases._kv, self.key, holder, self._revision)
        return self._revision is not None


async def claim(kv: Any, key: str, holder: str, revision: int | None) -> int | None:
    """Take `key` if free, or renew it if ours (from `revision`, None: never held); its new revision, or None while
    another holder's lease lives.

    A write whose acknowledgement was lost (a timeout while the R3 stream elected a leader: TRANSIENT, raised to
    the caller) may have landed, leaving the lease in our name at a revision we never learnt. Refused from then on,
    the holder stood down until its own lease lapsed: a TTL and more without scheduler passes for the leader
    lease. So a refused write reads the lease, and one in our name is renewed from the revision it holds."""
    try:
        return await _write(kv, key, holder, revision)
    except REFUSED:
        pass
    try:
        entry = await kv.get(key)
    except REFUSED:  # none (KeyNotFoundError is one), or the server would not say
        return None
    if entry is None or entry.value != holder.encode():
        return None
    try:
        return await _write(kv, key, holder, entry.revision)
    except REFUSED:  # taken meanwhile
        return None


async def _write(kv: Any, key: str, holder: str, revision: int | None) -> int:
    if revision is None:
        return await kv.create(key, holder.encode())
    return await kv.update(key, holder.encode(), last=revision)


def _announcement(name: str) -> str:
    return "announce." + name.replace(".", "_")


def _key(node: str) -> str:
    return "node." + node.replace(".", "_")


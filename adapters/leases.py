"""Leases in JetStream KV with a TTL: the scheduler's leader lease and each node's heartbeat lease.

Heartbeats are not events: a node's lease is a KV entry the agent's heartbeat refreshes; when it lapses
(the bucket's max age passes without a write) the leader turns that into a `NodeWentOffline` event.
"""

from __future__ import annotations

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
        try:
            self._leader_revision = await self._write_leader(holder, self._leader_revision)
            return True
        except REFUSED:
            pass
        # A write whose acknowledgement was lost (a timeout while the stream elected a leader: TRANSIENT above) may
        # have landed, leaving the lease in our name at a revision we never learnt. Refused from then on, the leader
        # stood down until its own lease lapsed (a TTL and more without passes: an R3 task array stood still).
        self._leader_revision = await self._our_revision(holder)
        if self._leader_revision is None:
            return False
        try:
            self._leader_revision = await self._write_leader(holder, self._leader_revision)
            return True
        except REFUSED:
            self._leader_revision = None
            return False

    async def _write_leader(self, holder: str, revision: int | None) -> int:
        if revision is None:
            return await self._kv.create(LEADER_KEY, holder.encode())
        return await self._kv.update(LEADER_KEY, holder.encode(), last=revision)

    async def _our_revision(self, holder: str) -> int | None:
        """The leader lease's revision if it holds our name (a write of ours that landed unacknowledged)."""
        try:
            entry = await self._kv.get(LEADER_KEY)
        except REFUSED:  # none (KeyNotFoundError is one), or the server would not say
            return None
        return entry.revision if entry is not None and entry.value == holder.encode() else None


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
        kv = self.leases._kv
        try:
            if self._revision is None:
                self._revision = await kv.create(self.key, holder.encode())
            else:
                self._revision = await kv.update(self.key, holder.encode(), last=self._revision)
            return True
        except (nats.js.errors.KeyWrongLastSequenceError, nats.js.errors.BadRequestError, nats.js.errors.APIError):
            self._revision = None
            return False


def _announcement(name: str) -> str:
    return "announce." + name.replace(".", "_")


def _key(node: str) -> str:
    return "node." + node.replace(".", "_")


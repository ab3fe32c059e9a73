"""The scheduler's leader lease in JetStream KV (adapters/leases.py) against a real nats-server."""

from __future__ import annotations

import asyncio
from uuid import uuid4

import nats
import pytest

from adapters.jetstream.connection import Connection
from adapters.leases import LEADER_KEY, Leases, NamedLease


@pytest.fixture
def cluster_leases(nats_url: str):
    """Leases of one cluster, made on demand (each with its own connection), closed after the test."""
    cluster, made = f"lease-{uuid4().hex[:8]}", []

    def make() -> Leases:
        leases = Leases(Connection(nats_url, cluster), ttl=30.0)
        made.append(leases)
        return leases

    yield make
    for leases in made:
        leases.connection.close()


def landed_unacknowledged(url: str, leases: Leases, key: str = LEADER_KEY) -> None:
    """The lease written again in its holder's name at a revision `leases` never learns: what a renewal whose
    acknowledgement was lost (a timeout while the R3 stream elected a leader) leaves behind."""
    async def write() -> None:
        client = await nats.connect(url)
        try:
            kv = await client.jetstream().key_value(leases.bucket)
            entry = await kv.get(key)
            await kv.update(key, entry.value, last=entry.revision)
        finally:
            await client.close()
    asyncio.run(write())


def test_a_leader_whose_renewal_landed_but_lost_its_ack_still_leads_at_the_next_renewal(cluster_leases, nats_url):
    leader = cluster_leases()
    assert leader.hold_leadership("api-1:100")
    landed_unacknowledged(nats_url, leader)
    assert leader.hold_leadership("api-1:100")  # before: refused until its own lease lapsed (a TTL without passes)
    assert leader.hold_leadership("api-1:100")


def test_after_a_lost_ack_the_lease_stays_its_holders_and_another_name_cannot_take_it(cluster_leases, nats_url):
    leader, other = cluster_leases(), cluster_leases()
    assert leader.hold_leadership("api-1:100")
    landed_unacknowledged(nats_url, leader)
    assert not other.hold_leadership("api-2:200")
    assert not other.hold_leadership("api-2:200")
    assert leader.hold_leadership("api-1:100")
    assert not other.hold_leadership("api-2:200")


def test_a_holder_whose_first_claim_landed_unacknowledged_leads_at_the_next_try(cluster_leases):
    cluster_leases().hold_leadership("api-1:100")  # its claim landed; the process never heard (a fresh Leases)
    assert cluster_leases().hold_leadership("api-1:100")


def test_a_named_lease_whose_renewal_landed_but_lost_its_ack_is_still_its_holders(cluster_leases, nats_url):
    leases = cluster_leases()
    lease, rival = NamedLease(leases, "provisioner.gpu"), NamedLease(cluster_leases(), "provisioner.gpu")
    assert lease.hold("api-1:100")
    landed_unacknowledged(nats_url, leases, lease.key)
    assert lease.hold("api-1:100")
    assert not rival.hold("api-2:200")

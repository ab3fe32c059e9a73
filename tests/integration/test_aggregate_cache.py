"""Cached aggregates on a real log: caught up with only their new events, including another writer's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from domain.app import Roving
from domain.tenancy import Role
from domain.tenancy.permissions import Principal
from tests.unit.app.builders import PlainHasher

ADMIN = Principal(user_id=None, username="root", role=Role.CLUSTER_ADMIN, organization_id=None, is_cluster_admin=True)
T0 = datetime(2026, 12, 1, tzinfo=UTC)


@pytest.fixture
def two_writers(nats_url):
    env = {"PERSISTENCE_MODULE": "adapters.jetstream", "ROVING_NATS_URL": nats_url, "ROVING_CLUSTER": "cache"}
    first, second = Roving(env=env, passwords=PlainHasher()), Roving(env=env, passwords=PlainHasher())
    yield first, second
    first.close()
    second.close()


def node_with_history(roving: Roving, holds: int):
    node, _ = roving.register_node("n1", 4, 1 << 30, {}, {}, "pool", "127.0.0.1", None, T0)
    for i in range(holds):
        at = T0 + timedelta(seconds=i + 1)
        roving.uncordon(node, ADMIN, at) if i % 2 else roving.cordon(node, f"hold {i}", ADMIN, at)
    return node


def test_a_cached_node_catches_up_with_another_writers_events(two_writers):
    first, second = two_writers
    node = node_with_history(first, 40)
    assert first.repository.get(node).holds == {}  # now cached in `first`
    second.cordon(node, "written elsewhere", ADMIN, T0 + timedelta(minutes=5))
    seen = first.repository.get(node)
    assert [h.reason for h in seen.holds.values()] == ["written elsewhere"]
    assert seen.version == second.repository.get(node).version


def test_catching_up_reads_only_the_new_events(two_writers):
    first, second = two_writers
    node = node_with_history(first, 60)
    first.repository.get(node)
    second.cordon(node, "one more", ADMIN, T0 + timedelta(minutes=5))
    recorder, reads = first.recorder, []
    original = recorder._read

    async def counting(subject, start, limit):
        found = await original(subject, start, limit)
        reads.append(len(found))
        return found

    recorder._read = counting
    first.repository.get(node)
    assert reads == [1]


def test_a_command_on_a_cached_aggregate_after_another_writer_still_lands(two_writers):
    first, second = two_writers
    node = node_with_history(first, 10)
    first.repository.get(node)
    second.cordon(node, "elsewhere", ADMIN, T0 + timedelta(minutes=5))
    first.uncordon(node, ADMIN, T0 + timedelta(minutes=6))
    assert second.repository.get(node).holds == {}

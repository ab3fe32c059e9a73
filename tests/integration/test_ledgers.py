"""Quotas and licenses on a real log: two control planes placing at once never pass a limit between them."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest

from domain.app import Conflict, Roving
from domain.app.ids import allocation_id
from domain.ids import ledger_id
from domain.ledger import PROJECT, SHARED
from tests.unit.app.builders import ADMIN, user
from tests.unit.posix.test_posix_ids import FastHasher

T0 = datetime(2026, 12, 1, tzinfo=UTC)
JOB = """
version: v4
project: lab
jobs:
  work:
    image: {uri: docker://alpine}
    script: sleep 1
    resource: {cpu: {cores: 2}, shared: {ansys: 1}}
"""


@pytest.fixture
def two_writers(nats_url):
    """Two applications on one stream, as two API workers (or an old and a new scheduler leader) are."""
    env = {"PERSISTENCE_MODULE": "adapters.jetstream", "ROVING_NATS_URL": nats_url, "ROVING_CLUSTER": f"l{uuid4().hex[:8]}"}
    first, second = Roving(env=env, passwords=FastHasher()), Roving(env=env, passwords=FastHasher())
    yield first, second
    first.close()
    second.close()


def test_two_writers_placing_at_once_never_pass_a_quota_or_a_license(two_writers):
    first, second = two_writers
    org = first.create_organization("acme", ADMIN, T0)
    first.create_user(org, "alice", "alice@acme.test", "A long passphrase 42!", "user", ADMIN, T0)
    first.put_project("lab", {"cpu": 6}, ["alice"], ADMIN, T0)
    first.change_config({"scheduler.sharedResources": {"ansys": 2}}, ADMIN, T0)
    nodes = [first.register_node(f"n{i}", 8, 8 << 30, {}, {}, "pool", "127.0.0.1", None, T0)[0] for i in range(4)]
    alice = user(org, "alice")
    allocations = []
    for _ in range(4):
        wid = uuid4()
        first.submit_workflow(wid, "w", JOB, 0, None, alice, T0)
        allocations.append(allocation_id(wid, "work", 1))
    placed, refused = [], []
    start = threading.Barrier(4)

    def place(app: Roving, allocation, node, seconds: int) -> None:
        start.wait()
        try:
            app.place(allocation, [node], "scheduler", T0 + timedelta(seconds=seconds))
            placed.append(allocation)
        except Conflict as error:
            refused.append(str(error))

    threads = [threading.Thread(target=place, args=(app, a, n, i))
               for i, (app, a, n) in enumerate(zip([first, second, first, second], allocations, nodes, strict=True))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(placed) == 2, (placed, refused)  # 2 licenses (and 6 cores would allow 3)
    assert all("shared resource ansys" in reason or "quota" in reason for reason in refused), refused
    fresh = Roving(env=first.env, passwords=FastHasher())
    try:
        assert fresh.repository.get(ledger_id(SHARED, "ansys")).used == {"ansys": 2}
        assert fresh.repository.get(ledger_id(PROJECT, "lab")).used["cpu"] == 4
    finally:
        fresh.close()


def test_work_placed_by_one_writer_and_ended_through_another_gives_its_quota_back(two_writers):
    """The soak's leak: the second writer held a copy of the ledger from before the first one's charge, found no
    charge for the ending allocation on it and gave nothing back; the quota stayed used for good."""
    first, second = two_writers
    org = first.create_organization("acme", ADMIN, T0)
    first.create_user(org, "alice", "alice@acme.test", "A long passphrase 42!", "user", ADMIN, T0)
    first.put_project("lab", {"cpu": 6}, ["alice"], ADMIN, T0)
    first.change_config({"scheduler.sharedResources": {"ansys": 2}}, ADMIN, T0)
    node, _ = first.register_node("n1", 8, 8 << 30, {}, {}, "pool", "127.0.0.1", None, T0)
    alice = user(org, "alice")
    ids = []
    for _ in range(2):
        wid = uuid4()
        first.submit_workflow(wid, "w", JOB, 0, None, alice, T0)
        ids.append(allocation_id(wid, "work", 1))
    second.repository.follow_log()  # memory trusted, as with a follower; this one is behind (it never reports)
    warm = second.place(ids[0], [node], "scheduler", T0)  # the second writer now holds the ledgers in memory
    second.report(node, ids[0], warm, "exited", 0, "", T0 + timedelta(seconds=1))
    fence = first.place(ids[1], [node], "scheduler", T0 + timedelta(seconds=2))  # charged through the first
    second.report(node, ids[1], fence, "exited", 0, "", T0 + timedelta(seconds=3))  # ...ended through the second
    fresh = Roving(env=first.env, passwords=FastHasher())
    try:
        assert fresh.repository.get(ledger_id(PROJECT, "lab")).held == {}
        assert fresh.repository.get(ledger_id(SHARED, "ansys")).held == {}
    finally:
        fresh.close()

"""A scheduler pass's blocked causes reach the log however long their messages and however many there are: a
commit past one message's limit is split, a message past it is cut (issue 39, item 8)."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID, uuid4

import pytest

from domain.app import Roving
from domain.ids import allocation_id
from domain.scheduler.reasons import Reason, Why
from domain.tenancy import Role
from domain.tenancy.permissions import Principal
from tests.unit.app.builders import PlainHasher

USER = Principal(user_id=uuid4(), username="alice", role=Role.USER, organization_id=uuid4())


def jobs(count: int) -> str:
    return "version: v4\njobs:\n" + "".join(
        f"  j{i}:\n    image: {{uri: docker://alpine}}\n    command: [sleep, '1']\n    resource: {{cpu: {{cores: 1}}}}\n"
        for i in range(count))


@pytest.fixture
def roving(nats_url: str):
    app = Roving(env={"PERSISTENCE_MODULE": "adapters.jetstream", "ROVING_NATS_URL": nats_url,
                      "ROVING_CLUSTER": f"blocked-{uuid4().hex[:6]}"}, passwords=PlainHasher())
    yield app
    app.close()


def allocations(roving: Roving, workflows: int, each: int) -> list[UUID]:
    found = []
    for _ in range(workflows):
        workflow = uuid4()
        roving.submit_workflow(workflow, "many", jobs(each), 0, None, USER, datetime.now(UTC))
        found += [allocation_id(workflow, f"j{i}", 1) for i in range(each)]
    return found


def test_a_pass_with_many_long_blocked_reasons_commits_all_of_them(roving):
    """256 allocations (the most one pass writes), each held by a 20 kB reason (a node list with its cordons)."""
    ids = allocations(roving, 4, 64)
    why = Why(reason=Reason.NODE_HELD, message="every node is held: " + "n1 cordoned for bios; " * 1000,
              detail={"nodes": ["n1"]})
    assert roving.record_blocked_all([(a, why) for a in ids], "scheduler", datetime.now(UTC)) == 256


def test_a_blocked_reason_past_one_messages_limit_is_cut_and_still_committed(roving):
    [allocation] = allocations(roving, 1, 1)
    why = Why(reason=Reason.NODE_HELD, message="held: " + "x" * 2_000_000, detail={"nodes": ["n1"]})
    assert roving.record_blocked_all([(allocation, why)], "scheduler", datetime.now(UTC)) == 1

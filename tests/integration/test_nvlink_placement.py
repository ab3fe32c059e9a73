"""On a real server with declared GPU nodes in two NVLink domains: a 2-node GPU gang lands in the one domain with
room and each rank is told that domain's IMEX channel; a gang no domain can hold waits, and why says so."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from uuid import uuid4

import pytest

from adapters.jetstream.connection import Connection
from adapters.leases import Leases
from adapters.tailer import Tailer
from api.scheduler.runner import SchedulerRunner
from domain.app import Roving
from domain.app.ids import allocation_id
from domain.scheduler.nvlink import IMEX_CHANNEL, NVLINK_DOMAIN
from domain.tenancy import Role
from domain.tenancy.permissions import Principal
from projections.views import Views
from tests.unit.app.builders import PlainHasher

USER = Principal(user_id=uuid4(), username="alice", role=Role.USER, organization_id=uuid4())
GANG = """
version: v4
jobs:
  train:
    image: {{uri: docker://alpine}}
    command: [sleep, '60']
    resource: {{cpu: {{cores: 1}}, memory: {{size: 1GiB}}, devices: {{nvidia.com/gpu: {gpus}}}}}
    multinode: {{nodes: {nodes}}}
"""
GPUS = {"nvidia.com/gpu": 4}


def now() -> datetime:
    return datetime.now(UTC)


def wait_for(predicate, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


@pytest.fixture
def plane(nats_url: str):
    cluster = f"nvl-{uuid4().hex[:6]}"
    roving = Roving(env={"PERSISTENCE_MODULE": "adapters.jetstream", "ROVING_NATS_URL": nats_url,
                         "ROVING_CLUSTER": cluster}, passwords=PlainHasher())
    views = Views()
    tailer = Tailer(roving, views).start()
    leases = Leases(Connection(nats_url, cluster), ttl=1.0)
    runner = SchedulerRunner(roving, views, tailer, leases, holder="a", lease_grace=60)
    yield roving, views, runner
    runner.stop()
    tailer.stop()
    leases.connection.close()
    roving.close()


def test_a_gpu_gang_runs_in_the_domain_with_room_with_its_imex_channel_and_one_no_domain_holds_waits(plane):
    roving, views, runner = plane
    declared = {"a1": {NVLINK_DOMAIN: "clique-a"},
                "b1": {NVLINK_DOMAIN: "clique-b", IMEX_CHANNEL: "2"}, "b2": {NVLINK_DOMAIN: "clique-b", IMEX_CHANNEL: "2"}}
    ids = {name: roving.register_node(name, 8, 32 << 30, dict(GPUS), annotations, "gpu", f"10.0.0.{i}", None, now())[0]
           for i, (name, annotations) in enumerate(declared.items(), start=1)}
    fits, too_wide = uuid4(), uuid4()
    roving.submit_workflow(fits, "fits", GANG.format(gpus=4, nodes=2), 0, None, USER, now())
    roving.submit_workflow(too_wide, "too-wide", GANG.format(gpus=4, nodes=3), 0, None, USER, now())
    runner.start()
    placed = allocation_id(fits, "train", 1)
    wait_for(lambda: (row := views.queue.allocation(placed)) is not None and row.state.value == "RUNNING")
    assert sorted(views.queue.allocation(placed).nodes) == sorted(str(ids[n]) for n in ("b1", "b2"))
    ranks = [views.assignments(ids[n]).start[0].peers for n in ("b1", "b2")]
    assert [(p.rank, p.nvlink_domain, p.imex_channel) for p in ranks] == [(0, "clique-b", 2), (1, "clique-b", 2)]
    waiting = allocation_id(too_wide, "train", 1)
    wait_for(lambda: runner.state.why(waiting) is not None)
    assert runner.state.why(waiting).message.startswith(f"no NVLink domain ({NVLINK_DOMAIN}) has 3 nodes")

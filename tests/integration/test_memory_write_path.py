"""The write path trusts memory once a follower reports to it: commands read nothing from a real log, yet another
writer's change is never lost (its event evicts the copy, or the save meets a conflict and decides again)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest

from adapters.tailer import Tailer
from api.composition.wakeups import LogSignals
from domain.app import Roving
from domain.app.errors import StaleEpoch
from domain.app.ids import allocation_id, node_id
from domain.tenancy import Role
from domain.tenancy.permissions import Principal
from projections.views import Views
from tests.unit.app.builders import PlainHasher

ADMIN = Principal(user_id=None, username="root", role=Role.CLUSTER_ADMIN, organization_id=None, is_cluster_admin=True)
T0 = datetime(2026, 12, 1, tzinfo=UTC)


@pytest.fixture
def writers(nats_url, request):
    cluster = f"memory{abs(hash(request.node.name)) % 10**8}"
    env = {"PERSISTENCE_MODULE": "adapters.jetstream", "ROVING_NATS_URL": nats_url, "ROVING_CLUSTER": cluster}
    first, second = Roving(env=env, passwords=PlainHasher()), Roving(env=env, passwords=PlainHasher())
    first.repository.follow_log()
    yield first, second
    first.close()
    second.close()


@pytest.fixture
def followed(writers):
    """`first` with its follower running, as the control plane has one."""
    first, second = writers
    views = Views()
    tailer = Tailer(first, views)
    LogSignals.attach(tailer).listen(first.repository.observe)
    tailer.start()
    yield first, second, tailer
    tailer.stop()


def counting_reads(roving: Roving) -> list[int]:
    """Every read of an aggregate's events from the log, by how many it returned."""
    recorder, reads = roving.recorder, []
    original = recorder._read

    async def counting(subject, start, limit):
        found = await original(subject, start, limit)
        reads.append(len(found))
        return found

    recorder._read = counting
    return reads


def registered(roving: Roving):
    node, _ = roving.register_node("n1", 4, 1 << 30, {}, {}, "pool", "127.0.0.1", None, T0)
    return node


def caught_up(tailer: Tailer, roving: Roving) -> None:
    assert tailer.wait_for(max(roving.last_position, 1), timeout=10)


def test_commands_on_an_aggregate_this_process_wrote_read_nothing_from_the_log(followed):
    first, _, _ = followed
    node = registered(first)
    reads = counting_reads(first)
    for i in range(5):
        first.cordon(node, f"hold {i}", ADMIN, T0 + timedelta(seconds=2 * i + 1))
        first.uncordon(node, ADMIN, T0 + timedelta(seconds=2 * i + 2))
    assert reads == []
    assert first.repository.get(node).version == registered_version(first, node)


def registered_version(roving: Roving, node) -> int:
    return len(list(roving.repository.event_store.get(node)))


def test_another_writers_event_reaches_the_follower_and_the_next_command_sees_it(followed):
    first, second, tailer = followed
    node = registered(first)
    first.repository.get(node)
    second.cordon(node, "written elsewhere", ADMIN, T0 + timedelta(minutes=1))
    caught_up(tailer, second)
    assert [h.reason for h in first.repository.get(node).holds.values()] == ["written elsewhere"]


def test_a_command_deciding_on_a_stale_copy_meets_the_conflict_and_decides_again(writers):
    first, second = writers  # no follower runs: the copy in memory stays stale until a save is refused
    node = registered(first)
    first.repository.get(node)
    second.cordon(node, "elsewhere", ADMIN, T0 + timedelta(minutes=1))
    first.cordon(node, "here", ADMIN, T0 + timedelta(minutes=2))
    reasons = sorted(h.reason for h in second.repository.get(node).holds.values())
    assert reasons == ["elsewhere", "here"]


def test_an_id_found_absent_is_found_once_another_writer_made_it_and_the_follower_saw_it(followed):
    first, second, tailer = followed
    created = node_id("n2")
    assert created not in first.repository
    second.register_node("n2", 4, 1 << 30, {}, {}, "pool", "127.0.0.1", None, T0)
    caught_up(tailer, second)
    deadline = time.monotonic() + 5
    while created not in first.repository and time.monotonic() < deadline:
        time.sleep(0.01)
    assert created in first.repository


def test_a_copy_that_lost_a_race_catches_up_with_the_new_events_only_not_its_whole_history(writers):
    first, second = writers  # no follower: the conflict is what tells `first` its copy is behind
    node = registered(first)
    for i in range(30):
        first.cordon(node, f"hold {i}", ADMIN, T0 + timedelta(seconds=2 * i + 1))
        first.uncordon(node, ADMIN, T0 + timedelta(seconds=2 * i + 2))
    second.cordon(node, "elsewhere", ADMIN, T0 + timedelta(minutes=5))
    reads = counting_reads(first)
    first.cordon(node, "here", ADMIN, T0 + timedelta(minutes=6))
    assert reads and max(reads) <= 2  # the event written elsewhere (and at most one more), not 61
    assert sorted(h.reason for h in first.repository.get(node).holds.values()) == ["elsewhere", "here"]


JOB = "version: v4\njobs:\n  j:\n    image: {uri: docker://alpine}\n    command: ['true']\n"
OWNER = Principal(user_id=uuid4(), username="alice", role=Role.USER, organization_id=uuid4())


def test_a_fresh_submission_is_not_looked_up_and_one_made_elsewhere_is_answered_as_the_first(writers):
    first, second = writers
    workflow = uuid4()
    first.submit_workflow(uuid4(), "w", JOB, 0, None, OWNER, T0, definitions=[])  # its owner and config now known
    reads = counting_reads(first)
    first.submit_workflow(uuid4(), "w", JOB, 0, None, OWNER, T0, definitions=[])
    assert reads == []  # a fresh id costs no read of the log
    second.submit_workflow(workflow, "w", JOB, 0, None, OWNER, T0, definitions=[])
    first.submit_workflow(workflow, "w", JOB, 0, None, OWNER, T0, definitions=[])  # the same key, on another process
    events = [type(e).__qualname__ for e in second.repository.event_store.get(workflow)]
    assert events.count("Workflow.Submitted") == 1


def test_a_report_refused_on_a_stale_copy_is_decided_again_on_the_log_and_recorded(writers):
    """Another API worker placed the allocation; this one's copy predates the placement. Refusing the agent's
    report as fenced would have the agent kill a job the control plane placed."""
    first, second = writers  # no follower runs: `first` keeps its copy from before the placement
    node = registered(first)
    workflow = uuid4()
    first.submit_workflow(workflow, "w", JOB, 0, None, OWNER, T0, definitions=[])
    allocation = allocation_id(workflow, "j", 1)
    first.repository.get(allocation)  # in memory, READY, on no node
    epoch = second.place(allocation, [node], "scheduler", T0 + timedelta(seconds=1))
    first.report(node, allocation, epoch, "exited", 0, "", T0 + timedelta(seconds=2))
    ended = second.repository.get(allocation)
    assert (ended.state.value, ended.exit_code) == ("FINISHED", 0)


def test_a_report_of_an_epoch_the_log_never_placed_is_still_refused(writers):
    first, _ = writers
    node = registered(first)
    workflow = uuid4()
    first.submit_workflow(workflow, "w", JOB, 0, None, OWNER, T0, definitions=[])
    allocation = allocation_id(workflow, "j", 1)
    with pytest.raises(StaleEpoch):
        first.report(node, allocation, 7, "exited", 0, "", T0 + timedelta(seconds=2))

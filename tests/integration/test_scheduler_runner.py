"""The scheduler runner on a real server: it places work, and a standby takes over when the leader dies."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from uuid import uuid4

import pytest

from adapters.jetstream.connection import Connection
from adapters.leases import Leases
from adapters.tailer import Tailer
from api.composition.wakeups import LogSignals
from api.scheduler.runner import SchedulerRunner
from domain.app import Roving
from domain.app.ids import allocation_id
from domain.tenancy import Role
from domain.tenancy.permissions import Principal
from projections.views import Views
from tests.unit.app.builders import PlainHasher

USER = Principal(user_id=uuid4(), username="alice", role=Role.USER, organization_id=uuid4())
JOBS = "version: v4\njobs:\n" + "".join(
    f"  j{i}:\n    image: {{uri: docker://alpine}}\n    command: [sleep, '1']\n    resource: {{cpu: {{cores: 1}}}}\n"
    for i in range(4))


def now() -> datetime:
    return datetime.now(UTC)


def control_plane(url: str, cluster: str, holder: str):
    roving = Roving(env={"PERSISTENCE_MODULE": "adapters.jetstream", "ROVING_NATS_URL": url,
                         "ROVING_CLUSTER": cluster}, passwords=PlainHasher())
    views = Views()
    tailer = Tailer(roving, views).start()
    leases = Leases(Connection(url, cluster), ttl=1.0)
    runner = SchedulerRunner(roving, views, tailer, leases, holder=holder, lease_grace=60)
    return roving, views, tailer, leases, runner


@pytest.fixture
def two_control_planes(nats_url: str):
    cluster = f"sched-{uuid4().hex[:6]}"
    planes = [control_plane(nats_url, cluster, holder) for holder in ("a", "b")]
    yield planes
    for roving, _, tailer, leases, runner in planes:
        runner.stop()
        tailer.stop()
        leases.connection.close()
        roving.close()


def wait_for(predicate, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


def test_the_leader_places_work_and_a_standby_takes_over_without_placing_twice(two_control_planes):
    (roving_a, views_a, _, _, leader), (roving_b, views_b, _, _, standby) = two_control_planes
    node, _ = roving_a.register_node("n1", 2, 4 << 30, {}, {}, "pool", "127.0.0.1", None, now())
    workflow_id = uuid4()
    roving_a.submit_workflow(workflow_id, "four", JOBS, 0, None, USER, now())
    leader.start()
    wait_for(lambda: sum(r.state == "RUNNING" for r in views_a.queue.rows()) == 2)
    standby.start()
    time.sleep(1.5)
    assert standby.leading is False and leader.leading is True
    leader.stop()  # dies holding the lease: the standby must wait for it to lapse, then lead

    running = [r for r in views_b.queue.rows() if r.state == "RUNNING"]
    for row in running:
        roving_b.report(node, row.id, row.epoch, "exited", 0, "", now())
    wait_for(lambda: sum(r.state == "RUNNING" for r in views_b.queue.rows()) == 2, timeout=20)
    assert standby.leading is True
    epochs = [roving_b.repository.get(allocation_id(workflow_id, f"j{i}", 1)).epoch for i in range(4)]
    assert epochs == [1, 1, 1, 1], "an allocation was placed more than once"


def test_a_job_no_node_fits_gets_one_scheduling_blocked_event_over_many_passes(two_control_planes):
    (roving, views, _, _, leader), _ = two_control_planes
    roving.register_node("small", 1, 1 << 30, {}, {}, "pool", "127.0.0.1", None, now())
    workflow_id = uuid4()
    roving.submit_workflow(workflow_id, "big", JOBS.replace("cores: 1", "cores: 8"), 0, None, USER, now())
    for _ in range(3):
        leader.tick()
    aid = allocation_id(workflow_id, "j0", 1)
    kinds = [type(e).__qualname__ for e in roving.repository.event_store.get(aid)]
    assert kinds.count("Allocation.SchedulingBlocked") == 1
    assert leader.state.why(aid) is not None


@pytest.fixture
def signalled_plane(nats_url: str):
    """A runner woken by the log (no leases: its backstop is the 30 s default interval)."""
    roving = Roving(env={"PERSISTENCE_MODULE": "adapters.jetstream", "ROVING_NATS_URL": nats_url,
                         "ROVING_CLUSTER": f"wake-{uuid4().hex[:6]}"}, passwords=PlainHasher())
    views = Views()
    tailer = Tailer(roving, views)
    signals = LogSignals.attach(tailer)
    tailer.start()
    runner = SchedulerRunner(roving, views, tailer, None, holder="a", signals=signals)
    passes: list[float] = []
    run_pass = runner.run_pass
    runner.run_pass = lambda: (passes.append(time.monotonic()), run_pass())[1]
    yield roving, views, runner, passes
    runner.stop()
    tailer.stop()
    roving.close()


def test_a_submit_is_placed_by_a_pass_it_wakes_not_at_the_next_interval(signalled_plane):
    roving, views, runner, passes = signalled_plane
    assert roving.scheduler_config().interval_seconds >= 30
    roving.register_node("n1", 2, 4 << 30, {}, {}, "pool", "127.0.0.1", None, now())
    runner.start()
    wait_for(lambda: len(passes) >= 1)  # the first pass, at start
    workflow_id = uuid4()
    roving.submit_workflow(workflow_id, "one", JOBS, 0, None, USER, now())
    wait_for(lambda: sum(r.state == "RUNNING" for r in views.queue.rows()) == 2, timeout=10)
    running = next(r for r in views.queue.rows() if r.state == "RUNNING")
    events = list(roving.repository.event_store.get(running.id))
    placed = next(e for e in events if type(e).__qualname__ == "Allocation.Placed")
    assert (placed.at - events[0].at).total_seconds() < 2, "placed by the backstop, not by a pass the submit woke"


def test_a_runner_that_placed_what_fits_stays_quiet_until_there_is_news(signalled_plane):
    roving, views, runner, passes = signalled_plane
    roving.register_node("n1", 2, 4 << 30, {}, {}, "pool", "127.0.0.1", None, now())
    runner.start()
    roving.submit_workflow(uuid4(), "four", JOBS, 0, None, USER, now())
    wait_for(lambda: sum(r.state == "RUNNING" for r in views.queue.rows()) == 2, timeout=10)
    time.sleep(0.5)  # the placements' own events have been applied by now
    settled = len(passes)
    time.sleep(1.0)
    assert len(passes) == settled


class CountingLeases:
    """Leases that are always granted and alive, counting what the runner asks of the lease store."""

    ttl = 60.0

    def __init__(self) -> None:
        self.renewals, self.checks = 0, 0

    def hold_leadership(self, holder: str) -> bool:
        self.renewals += 1
        return True

    def alive(self, node: str) -> bool:
        self.checks += 1
        return True


def test_a_burst_of_passes_renews_the_leader_lease_and_checks_node_leases_once(signalled_plane):
    roving, views, _, _ = signalled_plane
    roving.register_node("n1", 2, 4 << 30, {}, {}, "pool", "127.0.0.1", None, now())
    wait_for(lambda: len(views.nodes.list()) == 1)
    leases = CountingLeases()
    runner = SchedulerRunner(roving, views, None, leases, holder="a", lease_grace=1e-9)
    for _ in range(5):
        runner.tick("event")
    assert (leases.renewals, leases.checks) == (1, 1)
    runner.tick("interval")  # the backstop still looks at every node
    assert leases.checks == 2


def test_a_pass_that_outlived_its_lease_commits_nothing_and_the_next_one_places(two_control_planes):
    (roving, views, _, _, runner), _ = two_control_planes
    roving.register_node("n1", 2, 4 << 30, {}, {}, "pool", "127.0.0.1", None, now())
    roving.submit_workflow(uuid4(), "four", JOBS, 0, None, USER, now())
    wait_for(lambda: len(views.queue.rows()) == 4)
    assert runner.lead()
    time.sleep(1.5)  # a process frozen between taking the lease and committing its pass: the 1 s lease lapses
    runner.run_pass()
    time.sleep(0.5)
    assert [r.state for r in views.queue.rows() if r.state == "RUNNING"] == [], "a stale pass placed work"
    runner.tick()
    wait_for(lambda: sum(r.state == "RUNNING" for r in views.queue.rows()) == 2)

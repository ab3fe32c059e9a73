"""Given allocations, nodes and tenants, the queue and node views show order, placement and holds."""

from datetime import timedelta

from domain.allocation import Allocation
from domain.cluster_config import ClusterConfig
from domain.fuzzfile import Resources
from domain.holds import Effect, Source
from domain.tenancy import Group, Organization, Role, User
from tests.unit.projections.builders import ONE_JOB, Feed, at, node, request, submit, uid

HASH = "scrypt$1024$8$1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA"


def tenants(feed: Feed, org_priority: int = 0) -> tuple[Organization, Group, User]:
    org = Organization.create(uid("org"), "Acme", [uid("alice")], by="root", at=at(0))
    group = Group.create(uid("group"), org.id, "training", [uid("alice")], by="root", at=at(0))
    alice = User.register(uid("alice"), org.id, "alice", "alice@acme.example", HASH, Role.ORG_OWNER, by="root", at=at(0))
    if org_priority:
        org.set_priority(org_priority, by="root", by_role=Role.CLUSTER_ADMIN, at=at(0))
    feed.save(org, group, alice)
    return org, group, alice


def test_queued_work_is_ordered_by_effective_priority_with_the_tenancy_as_it_is_now():
    feed = Feed()
    org, _, _ = tenants(feed)
    acme = submit(ONE_JOB, name="acme")
    other = submit(ONE_JOB, name="other", owner={"organization": "o2", "group": "g2", "user": "u2"})
    feed.save(acme, other, request(other, "main", minute=0), request(acme, "main", minute=1))
    assert [r.workflow_id for r in feed.views.queue.rows(now=at(2))] == [other.id, acme.id]
    org.set_priority(10, by="root", by_role=Role.CLUSTER_ADMIN, at=at(2))
    feed.save(org)
    rows = feed.views.queue.rows(now=at(2))
    assert [r.workflow_id for r in rows] == [acme.id, other.id]
    assert (rows[0].priority_inputs["organization"], rows[0].state, rows[0].organization_id) == (10, "READY", str(org.id))


def test_the_configured_expression_and_pushed_priorities_decide_the_shown_priority():
    feed = Feed()
    config = ClusterConfig(cluster="test", by="root", at=at(0))
    config.change({"scheduler": {"priority": "user * 2 + 1"}}, by="root", at=at(0))
    workflow = submit(ONE_JOB)
    allocation = request(workflow, "main", user_priority=3)
    feed.save(config, workflow, allocation)
    assert feed.views.queue.get(allocation.id, now=at(1)).priority == 7.0
    assert feed.views.queue.rows(ranked={str(allocation.id): 42.5})[0].priority == 42.5
    assert feed.views.queue.get(allocation.id, now=at(1), ranked={str(allocation.id): 42.5}).priority == 42.5


def test_queue_filters_and_stats_count_each_state():
    feed, n1 = Feed(), node("node-1")
    first, second = submit(ONE_JOB, name="first"), submit(ONE_JOB, name="second")
    running, waiting = request(first, "main"), request(second, "main", user_priority=4)
    running.place([str(n1.id)], by="scheduler", at=at(1))
    feed.save(n1, first, second, running, waiting)
    assert [r.id for r in feed.views.queue.rows(state="running")] == [running.id]
    assert [r.node for r in feed.views.queue.rows(state="RUNNING")] == ["node-1"]
    assert [r.id for r in feed.views.queue.rows(priority_min=4, now=at(1))] == [waiting.id]
    assert feed.views.queue.rows(organization_id="elsewhere") == []
    stats = feed.views.queue.stats()
    assert (stats["depth"]["READY"], stats["depth"]["RUNNING"], stats["total"]) == (1, 1, 2)
    assert "last_pass" not in stats  # the runner's figures are its own (api.scheduler.state), not the log's


def test_a_node_shows_its_holds_and_allocations_and_is_found_by_name():
    feed, n1, flow = Feed(), node("node-1"), submit(ONE_JOB)
    running = request(flow, "main")
    running.place([str(n1.id)], by="scheduler", at=at(1))
    n1.place_hold("h1", Effect.CORDON, Source.ADMIN, "bios update", by="alice", at=at(1))
    feed.save(n1, node("node-2"), flow, running)
    row = feed.views.nodes.by_name("node-1")
    assert (row.status, row.cpu, row.definition, row.epoch, row.allocations) == (
        "READY", 8, "cpu-small", 1, [str(running.id)])
    assert [(h.id, h.effect, h.source, h.reason, h.by) for h in row.holds] == [
        ("h1", "cordon", "admin", "bios update", "alice")]
    assert row.accepts_new_work is False
    assert [n.name for n in feed.views.nodes.list()] == ["node-1", "node-2"]
    assert feed.views.nodes.get(n1.id) == row


def test_a_node_shows_what_its_running_work_uses_until_that_work_ends():
    feed, n1, flow = Feed(), node("node-1"), submit(ONE_JOB)
    running = request(flow, "main")
    running.place([str(n1.id)], by="scheduler", at=at(1))
    feed.save(n1, flow, running)
    row = feed.views.nodes.get(n1.id)
    assert (row.allocated_cpu, row.allocated_memory) == (running.resources.cpu_cores, running.resources.memory_bytes)
    running.exited(0, running.epoch, by="agent", at=at(2))
    feed.save(running)
    row = feed.views.nodes.get(n1.id)
    assert (row.allocations, row.allocated_cpu, row.allocated_memory) == ([], 0, 0)


def test_released_holds_and_removed_nodes_leave_the_list():
    feed, n1 = Feed(), node("node-1")
    n1.place_hold("h1", Effect.CORDON, Source.ADMIN, "bios", by="alice", at=at(1))
    feed.save(n1)
    n1.release_admin_cordons(by="alice", at=at(2))
    n1.go_offline([], by="monitor", at=at(3))
    feed.save(n1)
    assert (feed.views.nodes.get(n1.id).holds, feed.views.nodes.get(n1.id).status) == ([], "OFFLINE")
    n1.remove([], by="alice", at=at(4))
    feed.save(n1)
    assert feed.views.nodes.list() == []
    assert feed.views.nodes.get(n1.id).removed is True


def test_tenancy_builds_the_principal_from_current_memberships():
    feed = Feed()
    org, group, alice = tenants(feed, org_priority=5)
    bob = User.register(uid("bob"), org.id, "bob", "bob@acme.example", HASH, by="root", at=at(1))
    group.add_member(bob.id, by="alice", at=at(1))
    feed.save(bob, group)
    principal = feed.views.tenancy.principal_for(bob.id)
    assert (principal.username, principal.group_ids, principal.owned_group_ids) == ("bob", frozenset({group.id}), frozenset())
    assert feed.views.tenancy.organization_by_name("Acme").priority == 5
    assert feed.views.tenancy.group_by_name(org.id, "training").members == {str(alice.id): "group_owner", str(bob.id): "member"}
    assert feed.views.tenancy.user_by_name("bob").groups == [group.id]
    assert feed.views.tenancy.principal_for(uid("nobody")) is None


def test_a_disabled_account_has_no_principal():
    feed = Feed()
    _, _, alice = tenants(feed)
    alice.disable("left the company", by="root", at=at(1) + timedelta(seconds=1))
    feed.save(alice)
    assert feed.views.tenancy.principal_for(alice.id) is None
    assert feed.views.tenancy.user(alice.id).disabled is True


def test_an_allocations_wait_starts_when_it_became_ready_in_either_shape_of_the_log():
    """Newer logs request a ready allocation in one event; older ones have a Requested, then a Readied later."""
    feed = Feed()
    workflow = submit(ONE_JOB)
    older = Allocation.request(uid("older"), workflow.id, "main", 1, Resources(), by="scheduler", at=at(1))
    older.mark_ready(by="scheduler", at=at(3))
    newer = Allocation.request(uid("newer"), workflow.id, "main", 2, Resources(), by="scheduler", at=at(4),
                               ready=True)
    waiting = Allocation.request(uid("waiting"), workflow.id, "main", 3, Resources(), by="scheduler", at=at(5))
    feed.save(workflow, older, newer, waiting)
    queue = feed.views.queue
    assert queue.ready_since(older.id) == at(3) and queue.ready_since(newer.id) == at(4)
    assert str(newer.id) in queue.readied and str(waiting.id) not in queue.readied


def test_a_placed_stage_shows_started_on_its_node_before_its_workflow_records_the_start():
    feed, n1, flow = Feed(), node("node-1"), submit(ONE_JOB)
    running = request(flow, "main")
    feed.save(n1, flow, running)
    running.place([str(n1.id)], by="scheduler", at=at(1))
    feed.save(running)  # the placement alone: the workflow has no StageStarted yet
    stage = next(s for s in feed.views.workflows.get(flow.id).stages if s.name == "main")
    assert (stage.status, stage.node, stage.started_at) == ("STARTED", "node-1", at(1))
    flow.stage_started("main", 1, n1.name, at(1))  # what the first report's commit records
    flow.stage_exited("main", 1, 0, at(2))
    feed.save(flow)
    stage = next(s for s in feed.views.workflows.get(flow.id).stages if s.name == "main")
    assert (stage.status, stage.started_at, stage.ended_at) == ("FINISHED", at(1), at(2))
    assert feed.views.workflows.get(flow.id).status == "FINISHED"


def test_a_nodes_history_shows_work_placed_on_it_and_its_end_from_the_allocations_events():
    feed, n1, flow = Feed(), node("node-1"), submit(ONE_JOB)
    running = request(flow, "main")
    running.place([str(n1.id)], by="scheduler", at=at(1))
    feed.save(n1, flow, running)
    running.exited(3, running.epoch, by="agent", at=at(2))
    feed.save(running)
    rows = [(r.message, r.allocation) for r in feed.views.node_events.of(n1.id)][:2]
    assert rows == [("work ended (FAILED)", str(running.id)), ("work placed", str(running.id))]


def test_an_older_log_that_recorded_the_placement_on_the_node_too_shows_it_once():
    from domain.node import Placement

    feed, n1, flow = Feed(), node("node-1"), submit(ONE_JOB)
    running = request(flow, "main")
    feed.save(n1, flow, running)
    running.place([str(n1.id)], by="scheduler", at=at(1))
    n1._allocation_placed(placement=Placement(id=str(running.id), cpu=1, memory=2**30), by="scheduler", at=at(1))
    feed.save(running, n1)  # as older code committed a placement: the allocation's event, then the node's
    rows = [(r.message, r.allocation) for r in feed.views.node_events.of(n1.id)]
    assert rows[0] == ("work placed: 1 cpu, 1.0 GiB", str(running.id))
    assert [m for m, _ in rows].count("work placed") == 0

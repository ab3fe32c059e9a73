"""The scheduler's snapshot and the agents' answers keep what they made from each allocation between reads, and never
show one that changed as it was."""

from domain.holds import Effect, Source
from domain.tenancy import Group, Role
from projections.snapshot import node_definitions
from tests.unit.projections.builders import ONE_JOB, Feed, at, node, request, submit, uid
from tests.unit.projections.test_queue_and_nodes import tenants


def test_work_placed_between_two_passes_is_running_in_the_second():
    feed, n1 = Feed(), node("node-1")
    workflow = submit(ONE_JOB)
    allocation = request(workflow, "main")
    feed.save(n1, workflow, allocation)
    assert [q.id for q in feed.views.scheduler_snapshot(at(1)).queued] == [str(allocation.id)]
    allocation.place([str(n1.id)], by="scheduler", at=at(2))
    feed.save(allocation)
    snapshot = feed.views.scheduler_snapshot(at(3))
    assert snapshot.queued == ()
    assert [(r.id, r.node_ids, r.started_at) for r in snapshot.running] == [(str(allocation.id), (str(n1.id),), at(2))]


def test_an_organization_priority_changed_between_two_passes_reaches_the_second():
    feed = Feed()
    org, _, _ = tenants(feed)
    workflow = submit(ONE_JOB)
    feed.save(workflow, request(workflow, "main"))
    assert feed.views.scheduler_snapshot(at(1)).queued[0].organization_priority == 0
    org.set_priority(7, by="root", by_role=Role.CLUSTER_ADMIN, at=at(2))
    feed.save(org)
    assert feed.views.scheduler_snapshot(at(3)).queued[0].organization_priority == 7



def test_a_uid_given_to_the_owner_while_its_job_runs_is_in_the_next_answer_to_the_agent():
    feed, n1 = Feed(), node("node-1")
    _, _, alice = tenants(feed)
    workflow = submit(ONE_JOB)
    allocation = request(workflow, "main")
    allocation.place([str(n1.id)], by="scheduler", at=at(1))
    feed.save(n1, workflow, allocation)
    assert feed.views.answer(n1.id).start[0].uid is None
    alice.set_uid(100000, by="root", at=at(2))
    feed.save(alice)
    assert (feed.views.answer(n1.id).start[0].uid, feed.views.answer(n1.id).start[0].username) == (100000, "alice")


def test_a_job_placed_again_on_the_same_node_is_answered_with_its_new_epoch():
    feed, n1 = Feed(), node("node-1")
    workflow = submit(ONE_JOB)
    allocation = request(workflow, "main")
    allocation.place([str(n1.id)], by="scheduler", at=at(1))
    feed.save(n1, workflow, allocation)
    assert feed.views.answer(n1.id).start[0].epoch == 1
    allocation.place([str(n1.id)], by="scheduler", at=at(3))
    feed.save(allocation)
    assert feed.views.answer(n1.id).start[0].epoch == 2


def test_a_node_registered_or_cordoned_between_two_passes_is_in_the_second_and_in_submission_checks():
    feed, n1 = Feed(), node("node-1")
    feed.save(n1)
    assert [n.name for n in feed.views.scheduler_snapshot(at(1)).nodes] == ["node-1"]
    n1.place_hold("h1", Effect.CORDON, Source.ADMIN, "bios update", by="alice", at=at(2))
    feed.save(n1, node("node-2", cpu=16))
    snapshot = feed.views.scheduler_snapshot(at(3))
    assert {n.name: len(n.holds) for n in snapshot.nodes} == {"node-1": 1, "node-2": 0}
    [pool] = node_definitions(feed.views.nodes)
    assert (pool.max_nodes, pool.shape.cpu) == (2, 16)


def test_an_account_read_again_after_it_joined_a_group_and_was_disabled_shows_both():
    feed = Feed()
    _, group, alice = tenants(feed)
    other = Group.create(uid("other"), uid("org"), "inference", [], by="root", at=at(0))
    feed.save(other)
    assert (feed.views.tenancy.user(alice.id).groups, feed.views.tenancy.user(alice.id).disabled) == ([group.id], False)
    other.add_member(alice.id, by="root", at=at(1))
    alice.disable("left the lab", by="root", at=at(1))
    feed.save(other, alice)
    row = feed.views.tenancy.user(alice.id)
    assert (sorted(row.groups), row.disabled) == (sorted([group.id, other.id]), True)

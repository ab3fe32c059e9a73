"""An owner's priority change reaches its queued and running allocations, each with its own event."""

from __future__ import annotations

from uuid import uuid4

import msgspec

from domain.allocation import priority_updated_text
from domain.app import ReadModelFunctions
from domain.app.ids import allocation_id
from projections.views import Views
from tests.unit.api.harness import SyncTailer
from tests.unit.app.builders import ADMIN, T0, app, later, user

TWO_JOBS = """
version: v4
jobs:
  a: {image: {uri: docker://alpine}, script: echo a}
  b: {image: {uri: docker://alpine}, script: echo b}
"""


def followed():
    """An application whose read models are views it keeps caught up, and those views and their feeder."""
    views = Views()

    def allocations_of_owner(kind, owner):
        tailer.wait_for(roving.last_position)
        return views.queue.live_allocations_of(kind, owner)

    roving = app(ReadModelFunctions(allocations_of_owner=allocations_of_owner))
    tailer = SyncTailer(roving, views)
    return roving, views, tailer


def organization_with_work(roving):
    org = roving.create_organization("acme", ADMIN, T0)
    roving.set_priority("organization", org, 5, ADMIN, T0)
    wid = uuid4()
    roving.submit_workflow(wid, "two", TWO_JOBS, 0, None, user(org), later(1))
    return org, wid


def events_of(roving, aid):
    return [e for e in roving.repository.event_store.get(aid)]


def test_an_organization_priority_change_updates_every_queued_and_running_allocation_with_an_event():
    roving = followed()[0]
    org, wid = organization_with_work(roving)
    node, _ = roving.register_node("n1", 4, 8 << 30, {}, {}, "pool", "127.0.0.1", 9100, T0)
    roving.place(allocation_id(wid, "a", 1), [node], "scheduler", later(2))
    roving.set_priority("organization", org, 10, ADMIN, later(3))
    for stage in ("a", "b"):
        alloc = roving.repository.get(allocation_id(wid, stage, 1))
        assert alloc.priority["organization"] == 10
        last = events_of(roving, alloc.id)[-1]
        assert type(last).__qualname__ == "Allocation.PriorityUpdated"
        assert priority_updated_text(last.kind, last.old, last.new) == "Priority updated: organization 5 -> 10"


def test_finished_work_keeps_the_priority_it_ran_with():
    roving = followed()[0]
    org, wid = organization_with_work(roving)
    node, _ = roving.register_node("n1", 4, 8 << 30, {}, {}, "pool", "127.0.0.1", 9100, T0)
    first = allocation_id(wid, "a", 1)
    roving.report(node, first, roving.place(first, [node], "scheduler", later(2)), "exited", 0, "", later(3))
    roving.set_priority("organization", org, 10, ADMIN, later(4))
    assert roving.repository.get(first).priority["organization"] == 5
    assert roving.repository.get(allocation_id(wid, "b", 1)).priority["organization"] == 10


def test_the_queue_view_ranks_by_the_updated_inputs_after_replay():
    roving, views, tailer = followed()
    org, wid = organization_with_work(roving)
    roving.set_priority("organization", org, 10, ADMIN, later(3))
    tailer.wait_for(roving.last_position)
    mirrored = views.queue.allocation(allocation_id(wid, "a", 1))
    assert mirrored.priority["organization"] == 10


def test_without_read_models_only_the_organization_records_the_change():
    roving = app()
    org = roving.create_organization("acme", ADMIN, T0)
    wid = uuid4()
    roving.submit_workflow(wid, "two", TWO_JOBS, 0, None, user(org), later(1))
    roving.set_priority("organization", org, 10, ADMIN, later(2))
    assert roving.repository.get(org).priority == 10
    assert roving.repository.get(allocation_id(wid, "a", 1)).priority["organization"] == 0


def test_a_user_priority_change_reaches_only_that_users_work():
    roving, views, tailer = followed()
    org = roving.create_organization("acme", ADMIN, T0)
    alice, bob = user(org, "alice"), user(org, "bob")
    mine, theirs = uuid4(), uuid4()
    roving.submit_workflow(mine, "mine", TWO_JOBS, 0, None, alice, later(1))
    roving.submit_workflow(theirs, "theirs", TWO_JOBS, 0, None, bob, later(1))
    tailer.wait_for(roving.last_position)
    assert views.queue.live_allocations_of("user", uuid4()) == []
    ids = views.queue.live_allocations_of("user", alice.user_id)
    assert sorted(map(str, ids)) == sorted(str(allocation_id(mine, s, 1)) for s in ("a", "b"))


def test_a_submission_takes_its_owners_priorities_from_the_tenancy_view():
    views = Views()
    roving = app(ReadModelFunctions(priorities=views.tenancy.owner_priorities))
    tailer = SyncTailer(roving, views)
    org = roving.create_organization("acme", ADMIN, T0)
    gpu = roving.create_group(org, "gpu", ADMIN, T0)
    roving.set_priority("organization", org, 7, ADMIN, T0)
    roving.set_priority("group", gpu, 3, ADMIN, T0)
    tailer.wait_for(roving.last_position)
    wid = uuid4()
    roving.submit_workflow(wid, "two", TWO_JOBS, 0, None, msgspec.structs.replace(user(org), group_ids=frozenset({gpu})),
                           later(1))
    assert roving.repository.get(allocation_id(wid, "a", 1)).priority == {"workflow": 0, "organization": 7, "group": 3, "user": 0}

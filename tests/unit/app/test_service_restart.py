"""Supervised services: `policy.restart: on-failure` restarts a service that exits non-zero, each restart an event
and a new attempt after a growing backoff, within its budget; its dependents start once it stays up."""

from __future__ import annotations

from uuid import uuid4

from domain.allocation import QueueState
from domain.app.ids import allocation_id
from domain.fuzzfile.restart import restart_delay
from tests.unit.app.builders import T0, app, later, user

SERVING = """
version: v4
services:
  db:
    image: {uri: docker://alpine}
    script: serve
    policy: {restart: on-failure}
    roving-restart: {attempts: 2, backoff: 1s, max-backoff: 3s}
jobs:
  client:
    image: {uri: docker://alpine}
    script: query
    depends-on: [{name: db, status: RUNNING}]
"""


def started(roving, wid, node, attempt, at):
    aid = allocation_id(wid, "db", attempt)
    return aid, roving.place(aid, [node], "scheduler", at)


def test_a_service_that_fails_twice_is_restarted_and_its_dependent_starts_once_it_stays_up():
    roving, wid = app(), uuid4()
    node, _ = roving.register_node("n1", 8, 8 << 30, {}, {}, "pool", "127.0.0.1", 9100, T0)
    roving.submit_workflow(wid, "w", SERVING, 0, None, user(), T0)
    for attempt in (1, 2):
        aid, fence = started(roving, wid, node, attempt, later(attempt * 10))
        roving.report(node, aid, fence, "exited", 1, "exited with code 1", later(attempt * 10 + 1))
        assert allocation_id(wid, "client", 1) not in roving.repository  # it waits for a db that stays up
    aid, fence = started(roving, wid, node, 3, later(30))
    roving.report(node, aid, fence, "ready", None, "", later(31))
    assert roving.repository.get(allocation_id(wid, "client", 1)).state is QueueState.READY
    workflow = roving.repository.get(wid)
    assert (workflow.stage("db").status.value, workflow.stage("db").attempt) == ("RUNNING", 3)


def test_a_service_out_of_restarts_fails_and_its_dependent_is_canceled():
    roving, wid = app(), uuid4()
    node, _ = roving.register_node("n1", 8, 8 << 30, {}, {}, "pool", "127.0.0.1", 9100, T0)
    roving.submit_workflow(wid, "w", SERVING, 0, None, user(), T0)
    for attempt in (1, 2, 3):
        aid, fence = started(roving, wid, node, attempt, later(attempt * 10))
        roving.report(node, aid, fence, "exited", 1, "", later(attempt * 10 + 1))
    workflow = roving.repository.get(wid)
    assert workflow.stage("db").status.value == "FAILED"
    assert workflow.stage("client").status.value == "CANCELED"


def test_a_service_that_exits_cleanly_is_not_restarted():
    roving, wid = app(), uuid4()
    node, _ = roving.register_node("n1", 8, 8 << 30, {}, {}, "pool", "127.0.0.1", 9100, T0)
    roving.submit_workflow(wid, "w", SERVING, 0, None, user(), T0)
    aid, fence = started(roving, wid, node, 1, later(1))
    roving.report(node, aid, fence, "exited", 0, "", later(2))
    assert allocation_id(wid, "db", 2) not in roving.repository


def test_the_backoff_doubles_from_its_first_value_up_to_its_most():
    assert [restart_delay(attempt, 1.0, 3.0) for attempt in (1, 2, 3, 4, 5)] == [0.0, 1.0, 2.0, 3.0, 3.0]

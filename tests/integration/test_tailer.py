"""Given a real JetStream log, the tailer catches the views up in pages, then follows live events."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from uuid import uuid4

import pytest
from eventsourcing.application import Application

from adapters.tailer import Tailer
from projections.views import Views
from tests.unit.projections.builders import ONE_JOB, at, node, request, submit

_clusters = itertools.count()


@pytest.fixture
def app(nats_url: str) -> Iterator[Application]:
    application = Application(env={
        "PERSISTENCE_MODULE": "adapters.jetstream", "ROVING_NATS_URL": nats_url,
        "ROVING_CLUSTER": f"tail{next(_clusters)}-{uuid4().hex[:8]}",
    })
    yield application
    application.close()


@pytest.fixture
def views() -> Views:
    return Views()


def test_the_views_catch_up_with_the_log_in_pages_then_follow_live_events(app: Application, views: Views):
    n1 = node("node-1")
    workflows = [submit(ONE_JOB, name=f"wf-{i}") for i in range(3)]
    app.save(n1, *workflows)
    last = app.recorder.max_notification_id()
    with Tailer(app, views, page=2) as tailer:
        assert tailer.caught_up.wait(10)
        assert tailer.wait_for(last, timeout=10)
        assert sorted(r.name for r in views.workflows.list()) == ["wf-0", "wf-1", "wf-2"]
        allocation = request(workflows[0], "main")
        allocation.place([str(n1.id)], by="scheduler", at=at(1))
        workflows[0].stage_started("main", 1, "node-1", at(1))
        recordings = app.save(allocation, workflows[0])
        assert tailer.wait_for(recordings[-1].notification.id, timeout=10)
        assert [s.status for s in views.workflows.get(workflows[0].id).stages] == ["STARTED"]
        assert [a.allocation_id for a in views.assignments(n1.id).start] == [str(allocation.id)]
    assert views.position == recordings[-1].notification.id


def test_a_restarted_tailer_resumes_from_the_views_position_without_reapplying(app: Application, views: Views):
    workflow = submit(ONE_JOB, name="once")
    app.save(workflow)
    with Tailer(app, views) as tailer:
        assert tailer.wait_for(app.recorder.max_notification_id(), timeout=10)
    workflow.cancel(by="bob", at=at(2), reason="wrong input")
    recordings = app.save(workflow)
    with Tailer(app, views) as tailer:
        assert tailer.wait_for(recordings[-1].notification.id, timeout=10)
    assert [r.message for r in views.workflows.events(workflow.id)] == [
        "Submitted by alice", "Ready to run", "Canceled by bob: wrong input"]


def test_wait_for_gives_up_after_its_timeout(app: Application, views: Views):
    with Tailer(app, views) as tailer:
        assert tailer.caught_up.wait(10)
        assert tailer.wait_for(10_000, timeout=0.2) is False


def test_a_live_burst_reaches_the_follower_in_order_and_at_most_once(app: Application):
    app.save(node("node-0"))
    with app.recorder.subscribe(gt=app.recorder.max_notification_id()) as subscription:
        recordings = app.save(*[node(f"node-{i}") for i in range(1, 6)])
        wanted = [r.notification.id for r in recordings]
        first = next(subscription)
        deadline = time.monotonic() + 10
        rest: list = []
        while len(rest) < len(wanted) - 1 and time.monotonic() < deadline:
            taken = subscription.take_ready(limit=2)
            assert len(taken) <= 2
            rest += taken
        assert [first.id, *(n.id for n in rest)] == wanted
        assert subscription.take_ready(limit=10) == []

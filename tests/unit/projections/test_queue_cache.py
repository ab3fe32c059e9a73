"""The queue view's caches change nothing users see: the same rows, order and filters as evaluating every
allocation afresh, a page is the head of the full list, and every priority change re-orders at once."""

from datetime import datetime

import pytest

from domain.cluster_config import ClusterConfig
from domain.scheduler.priority import DEFAULT_PRIORITY, Evaluator
from domain.tenancy import Role
from projections import queue as queue_module
from projections.queue import QueueView, to_queued
from tests.unit.api.harness import JOB, Api
from tests.unit.projections.builders import ONE_JOB, Feed, at, node, request, submit
from tests.unit.projections.test_queue_and_nodes import tenants

OWNERS = [None, {"organization": "o2", "group": "g2", "user": "u2"}, {"organization": "o3", "group": "g3", "user": "u3"}]


def reference(q: QueueView, state=None, owner=None, priority_min=None, organization_id=None, user_id=None,
              now: datetime | None = None, live_only: bool = False, ranked=None):
    """What the view showed before it cached anything: every allocation evaluated, filtered, then sorted."""
    evaluate, found = Evaluator(q.expression), []
    for a in q.allocations():
        if state is not None and a.state.value != state.upper():
            continue
        if state is None and live_only and a.ended:
            continue
        o, inputs = q.owner(a.workflow_id), q.inputs(a)
        priority = (ranked or {}).get(str(a.id))
        if priority is None:
            priority = evaluate(to_queued(a, o, inputs), now)
        if ((owner is None or owner in (o.user_id, o.group_id))
                and (organization_id is None or o.organization_id == str(organization_id))
                and (user_id is None or o.user_id == str(user_id))
                and (priority_min is None or priority >= priority_min)):
            found.append((-priority, a.requested_at, str(a.id), a.id, priority))
    return [(i, p) for *_, i, p in sorted(found)]


def shown(rows):
    return [(r.id, r.priority) for r in rows]


def busy_feed(expression: str | None = None) -> Feed:
    """Allocations of three owners in every kind of state, with tied and distinct priorities and wait times."""
    feed, n1 = Feed(), node("node-1")
    tenants(feed)
    aggregates = [n1]
    if expression:
        config = ClusterConfig(cluster="test", by="root", at=at(0))
        config.change({"scheduler": {"priority": expression}}, by="root", at=at(0))
        aggregates.append(config)
    for i in range(12):
        workflow = submit(ONE_JOB, name=f"wf{i}", owner=OWNERS[i % 3], minute=i)
        aggregates.append(workflow)
        for attempt in (1, 2):
            a = request(workflow, "main", attempt=attempt, minute=(i * 7) % 5, user_priority=i % 4)
            if i % 4 == 1:
                a.place([str(n1.id)], by="scheduler", at=at(6))
            if i % 6 == 5 and attempt == 2:
                a.cancel("no longer wanted", by="alice", at=at(7))
            if i == 9 and attempt == 1:
                a.exited(0, a.epoch, by="agent", at=at(8))
            aggregates.append(a)
    feed.save(*aggregates)
    return feed


FILTERS = [
    {}, {"state": "READY"}, {"state": "running"}, {"state": "CANCELED"}, {"state": "FINISHED"}, {"live_only": True},
    {"owner": "u2"}, {"owner": "g3"}, {"user_id": "u2"}, {"organization_id": "o3"}, {"priority_min": 2},
    {"priority_min": 2, "owner": "u3", "live_only": True},
]


@pytest.mark.parametrize("expression", [None, "user * 10 - waited_seconds / 60", "double(cpu) / 3.0"])
@pytest.mark.parametrize("filters", FILTERS, ids=str)
def test_every_filter_shows_what_evaluating_every_allocation_showed(expression, filters):
    feed = busy_feed(expression)
    q = feed.views.queue
    for minute in (10, 10, 95):  # the same moment twice (served from the cache), then a later one
        rows, total = q.page(now=at(minute), **filters)
        assert shown(rows) == reference(q, now=at(minute), **filters)
        assert total == len(rows)
        if not filters.get("live_only"):
            assert shown(q.rows(now=at(minute), **filters)) == shown(rows)


def test_a_passs_ranking_stands_in_where_it_names_a_row_and_the_cache_never_serves_another_passs():
    q = busy_feed("user * 10 - waited_seconds / 60").views.queue
    ids = sorted(str(a.id) for a in q.allocations())
    first = {i: float(n % 5) for n, i in enumerate(ids[::2])}
    second = {i: float(-n) for n, i in enumerate(ids[::3])}
    for ranked in (first, first, second, dict(second), None, first, {}):  # repeats are served from the cache
        for filters in FILTERS:
            rows, total = q.page(now=at(10), ranked=ranked, **filters)
            assert shown(rows) == reference(q, now=at(10), ranked=ranked, **filters) and total == len(rows)


def test_a_page_is_the_head_of_the_whole_list_and_counts_all_that_match():
    q = busy_feed().views.queue
    whole = shown(q.rows(now=at(10)))
    for limit in (1, 5, len(whole), len(whole) + 3):
        rows, total = q.page(now=at(10), limit=limit)
        assert (shown(rows), total) == (whole[:limit], len(whole))
    rows, total = q.page(now=at(10), limit=2, owner="u2")
    assert (shown(rows), total) == (reference(q, now=at(10), owner="u2")[:2], len(reference(q, now=at(10), owner="u2")))
    assert shown(q.rows(now=at(10), limit=3)) == whole[:3]


def test_ended_allocations_leave_the_live_queue_and_stay_in_the_history():
    feed = Feed()
    workflow = submit(ONE_JOB)
    first, second = request(workflow, "main", attempt=1), request(workflow, "main", attempt=2, minute=1)
    feed.save(workflow, first, second)
    q = feed.views.queue
    assert [r.id for r in q.page(now=at(2), live_only=True)[0]] == [first.id, second.id]
    first.cancel("not needed", by="alice", at=at(2))
    feed.save(first)
    assert [r.id for r in q.page(now=at(2), live_only=True)[0]] == [second.id]
    assert [(r.id, r.state) for r in q.rows(now=at(2))] == [(first.id, "CANCELED"), (second.id, "READY")]
    assert q.live_allocations_of("user", q.owner(workflow.id).user_id) == [second.id]
    stats = q.stats()
    assert (stats["depth"]["READY"], stats["depth"]["CANCELED"], stats["total"]) == (1, 1, 2)


def test_a_tenant_priority_change_reorders_the_cached_queue():
    feed = Feed()
    org, _, _ = tenants(feed)
    acme, other = submit(ONE_JOB, name="acme"), submit(ONE_JOB, name="other", owner=OWNERS[1])
    feed.save(acme, other, request(other, "main", minute=0), request(acme, "main", minute=1))
    q = feed.views.queue
    assert [r.workflow_id for r in q.rows(now=at(2))] == [other.id, acme.id]
    org.set_priority(10, by="root", by_role=Role.CLUSTER_ADMIN, at=at(2))
    feed.save(org)
    rows = q.rows(now=at(2))
    assert [(r.workflow_id, r.priority) for r in rows] == [(acme.id, 10.0), (other.id, 0.0)]
    assert rows[0].priority_inputs["organization"] == 10


def test_pushed_priorities_reorder_and_unpushed_rows_fall_back_to_the_expression():
    feed = Feed()
    workflow = submit(ONE_JOB)
    low, high = request(workflow, "main", attempt=1, user_priority=1), request(workflow, "main", attempt=2, user_priority=5)
    feed.save(workflow, low, high)
    q = feed.views.queue
    assert shown(q.rows(now=at(1))) == [(high.id, 5.0), (low.id, 1.0)]
    assert shown(q.rows(now=at(1), ranked={str(low.id): 9.0})) == [(low.id, 9.0), (high.id, 5.0)]
    both = {str(low.id): 9.0, str(high.id): 12.5}
    assert shown(q.rows(now=at(1), ranked=both)) == [(high.id, 12.5), (low.id, 9.0)]
    assert shown(q.rows(now=at(1), ranked={})) == [(high.id, 5.0), (low.id, 1.0)]
    assert shown(q.rows(now=at(1))) == [(high.id, 5.0), (low.id, 1.0)]
    assert q.get(low.id, now=at(1)).priority == 1.0
    low.update_priority("user", 7, by="root", at=at(1))  # the allocation's own recorded input moves
    feed.save(low)
    assert shown(q.rows(now=at(1))) == [(low.id, 7.0), (high.id, 5.0)]


def test_a_new_expression_and_a_state_change_reorder_the_cached_queue():
    feed, n1 = Feed(), node("node-1")
    workflow = submit(ONE_JOB)
    early, late = request(workflow, "main", attempt=1, minute=0), request(workflow, "main", attempt=2, minute=1)
    feed.save(n1, workflow, early, late)
    q = feed.views.queue
    assert [r.id for r in q.rows(now=at(2))] == [early.id, late.id]  # tied priority: the longest waiting first
    config = ClusterConfig(cluster="test", by="root", at=at(2))
    config.change({"scheduler": {"priority": "0 - waited_seconds"}}, by="root", at=at(2))
    feed.save(config)
    assert shown(q.rows(now=at(2))) == [(late.id, -60.0), (early.id, -120.0)]
    assert shown(q.rows(now=at(3))) == [(late.id, -120.0), (early.id, -180.0)]  # another moment, re-evaluated
    late.place([str(n1.id)], by="scheduler", at=at(3))
    feed.save(late)
    assert [(r.id, r.state, r.node) for r in q.rows(state="RUNNING", now=at(3))] == [(late.id, "RUNNING", "node-1")]
    assert [r.id for r in q.rows(state="READY", now=at(3))] == [early.id]


def test_without_a_given_moment_the_waited_time_is_re_evaluated_at_most_once_a_second(monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(queue_module.time, "monotonic", lambda: clock[0])
    feed = Feed()
    config = ClusterConfig(cluster="test", by="root", at=at(0))
    config.change({"scheduler": {"priority": "waited_seconds"}}, by="root", at=at(0))
    workflow = submit(ONE_JOB)
    feed.save(config, workflow, request(workflow, "main"))
    q = feed.views.queue
    first = q.rows()[0].priority
    calls = []
    monkeypatch.setattr(Evaluator, "__call__", lambda self, a, now: calls.append(now) or 1.0)
    clock[0] += 0.5
    assert q.rows()[0].priority == first and calls == []  # within the second: the cached figure
    clock[0] += 0.6
    assert q.rows()[0].priority == 1.0 and len(calls) == 1  # past it: evaluated once more


def test_a_time_independent_expression_is_evaluated_once_per_change(monkeypatch):
    feed = Feed()
    workflow = submit(ONE_JOB)
    allocation = request(workflow, "main", user_priority=2)
    feed.save(workflow, allocation)
    q = feed.views.queue
    assert DEFAULT_PRIORITY and q.rows(now=at(1))[0].priority == 2.0
    config = ClusterConfig(cluster="test", by="root", at=at(0))
    config.change({"scheduler": {"priority": "user * 3"}}, by="root", at=at(1))
    feed.save(config)
    assert q.rows(now=at(1))[0].priority == 6.0
    calls = []
    real = Evaluator.__call__
    monkeypatch.setattr(Evaluator, "__call__", lambda self, a, now: calls.append(now) or real(self, a, now))
    assert [q.rows(now=at(m))[0].priority for m in (2, 3, 4)] == [6.0, 6.0, 6.0] and calls == []
    allocation.place(["n1"], by="scheduler", at=at(5))
    feed.save(allocation)
    assert q.rows(now=at(5))[0].priority == 6.0 and len(calls) == 1  # only the changed row


def test_the_queue_route_pages_counts_and_keeps_history_out_unless_asked():
    api = Api()
    _, alice = api.organization_with_user("acme", "alice")
    _, bob = api.organization_with_user("globex", "bob")
    ids = []
    for name, who in (("one", alice), ("two", bob), ("three", alice)):
        answer = api.request("POST", "/v4/workflows", who, json={"name": name, "definition": JOB})
        assert answer.status_code == 201, answer.text
        ids.append(answer.json()["id"])
    assert api.request("POST", f"/v4/workflows/{ids[2]}:stop", alice).status_code == 200
    api.services.tailer.wait_for(api.services.roving.last_position)
    q = api.services.views.queue

    def get(query: str, who=api.admin):
        answer = api.request("GET", f"/v4/scheduler/queue{query}", who)
        assert answer.status_code == 200, answer.text
        return answer.json()

    everyone = get("")
    live = [str(i) for i, _ in reference(q, now=datetime.now(tz=at(0).tzinfo), live_only=True)]
    assert [r["id"] for r in everyone["queue"]] == live and everyone["total"] == len(live) >= 2
    assert {r["state"] for r in everyone["queue"]} <= {"PENDING", "READY", "RUNNING"}
    history = get("?all=true")
    assert history["total"] == len(q.allocations()) > everyone["total"]
    assert any(r["state"] == "CANCELED" for r in history["queue"])
    one = get("?limit=1")
    assert (len(one["queue"]), one["total"], one["limit"]) == (1, everyone["total"], 1)
    assert one["queue"][0]["id"] == everyone["queue"][0]["id"]
    canceled = get("?queue=canceled")
    assert canceled["total"] >= 1 and {r["state"] for r in canceled["queue"]} == {"CANCELED"}
    mine = get("", bob)
    assert mine["mine"] is True and {r["workflow_id"] for r in mine["queue"]} == {ids[1]}
    assert set(everyone["queue"][0]) == set(get("?limit=1")["queue"][0])


def test_a_node_registered_later_names_the_rows_placed_on_it():
    feed, n1 = Feed(), node("node-7")
    workflow = submit(ONE_JOB)
    allocation = request(workflow, "main")
    allocation.place([str(n1.id)], by="scheduler", at=at(1))
    feed.save(workflow, allocation)
    q = feed.views.queue
    assert q.rows(now=at(2))[0].node == str(n1.id)
    feed.save(n1)
    assert (q.rows(now=at(2))[0].node, q.get(allocation.id).nodes) == ("node-7", ["node-7"])

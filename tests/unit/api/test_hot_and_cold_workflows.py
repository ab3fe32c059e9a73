"""With ROVING_HOT_WORKFLOWS=N the views keep live work and the N most recently finished workflows; an older one
leaves memory and still answers describe, events, why, its log and the lists, as it did while hot."""

import pytest

from adapters.cold_index import ColdIndex
from tests.unit.api.harness import JOB, Api

HOT = 2


@pytest.fixture(scope="module")
def world():
    """Six finished workflows and one waiting, every answer about them taken while all were hot, then the hot set
    cut to HOT."""
    api = Api()
    views = api.services.views
    views.workflows.cold_rows = ColdIndex(":memory:")
    _, alice = api.organization_with_user("acme", "alice")
    ended = [api.request("POST", "/v4/workflows", alice, json={"name": f"done-{n}", "definition": JOB}).json()["id"]
             for n in range(6)]
    for wid in ended:
        assert api.request("PATCH", f"/v4/workflows/{wid}:stop", alice).status_code == 200
    waiting = api.request("POST", "/v4/workflows", alice, json={"name": "waiting", "definition": JOB}).json()["id"]
    hot = {wid: answers(api, alice, wid) for wid in [*ended, waiting]}
    listed = every_row(api, alice)
    views.hot_workflows = HOT
    views.apply([])  # the next batch trims
    return api, alice, ended, waiting, hot, listed


def answers(api, token, wid):
    return {part: api.request("GET", f"/v4/workflows/{wid}{part}", token).json() for part in ("", "/events", "/why")}


def every_row(api, token):
    rows, after = [], None
    while True:
        body = api.request("GET", "/v4/workflows?limit=2" + (f"&next={after}" if after else ""), token).json()
        rows, after = rows + body["workflows"], body["next"]
        if after is None:
            return rows


def test_memory_holds_the_live_workflow_and_only_the_newest_finished_ones(world):
    api, _, ended, waiting, _, _ = world
    workflows, queue = api.services.views.workflows, api.services.views.queue
    assert set(map(str, workflows.mirror.items)) == {waiting, *ended[-HOT:]}
    for table in (workflows.activity, workflows.updated, workflows.current, workflows.times):
        assert set(map(str, table)) <= {waiting, *ended[-HOT:]}
    assert {str(a.workflow_id) for a in queue.mirror.items.values()} == {waiting, *ended[-HOT:]}
    assert len(workflows.allocation_stage) == len(queue.mirror.items) == HOT + 1


def test_a_cold_workflow_answers_describe_events_and_why_as_it_did_while_hot(world):
    api, alice, ended, _, hot, _ = world
    for wid in ended[:-HOT]:
        cold = answers(api, alice, wid)
        assert cold == hot[wid]
        assert cold[""]["status"] == "CANCELED" and len(cold["/events"]["events"]) >= 2


def test_a_cold_workflows_log_and_event_stream_still_answer(world):
    api, alice, ended, _, _, _ = world
    assert api.request("GET", f"/v4/workflows/{ended[0]}/log/hello", alice).status_code == 200
    stream = api.request("GET", f"/v4/workflows/{ended[0]}/events?follow=true", alice).text
    assert "event: activity" in stream and stream.rstrip().endswith('data: {"status":"CANCELED"}')


def test_the_list_pages_through_hot_and_cold_workflows_alike(world):
    api, alice, _, _, _, listed = world
    assert every_row(api, alice) == listed and len(listed) == 7


def test_another_tenant_sees_no_cold_workflow(world):
    api, _, ended, _, _, _ = world
    _, bob = api.organization_with_user("globex", "bob")
    assert api.request("GET", f"/v4/workflows/{ended[0]}", bob).status_code == 404
    assert every_row(api, bob) == []


def test_an_unknown_id_is_still_a_404(world):
    api, alice, _, _, _, _ = world
    assert api.request("GET", "/v4/workflows/00000000-0000-4000-8000-000000000000", alice).status_code == 404


def test_roving_hot_workflows_sets_the_hot_set_and_a_bad_value_is_named():
    from api.composition.settings import SettingsError, load_settings
    assert load_settings({}).hot_workflows == 10_000
    assert load_settings({"ROVING_HOT_WORKFLOWS": "50"}).hot_workflows == 50
    with pytest.raises(SettingsError, match="ROVING_HOT_WORKFLOWS"):
        load_settings({"ROVING_HOT_WORKFLOWS": "lots"})

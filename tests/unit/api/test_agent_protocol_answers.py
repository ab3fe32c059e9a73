"""The agent protocol's answers: recorded (also when repeated), fenced with `code: stale_epoch`, busy with 503."""

from datetime import UTC, datetime
from uuid import UUID

import pytest

from domain.agent_protocol import MAX_NODE_ANNOTATIONS, MAX_REPORT_REASON
from domain.app.errors import Busy
from domain.app.ids import allocation_id
from domain.tenancy import Role, Source
from tests.unit.api.harness import JOB, Api, token

AGENT = token("agent", Role.USER, source=Source.AGENT)
REGISTER = {"name": "n1", "cpu": 4, "memory": 8 * 2**30, "definition": "local"}


@pytest.fixture
def placed():
    """A registered node and one allocation placed on it: (api, report body)."""
    api = Api()
    node = api.request("POST", "/v4/agent/register", AGENT, json=REGISTER).json()
    answer = api.request("POST", "/v4/workflows", api.admin, json={"name": "w", "definition": JOB})
    aid = allocation_id(UUID(answer.json()["id"]), "hello", 1)
    epoch = api.services.roving.place(aid, [UUID(node["node_id"])], "scheduler", datetime.now(UTC))
    body = {"node_id": node["node_id"], "allocation_id": str(aid), "epoch": epoch, "event": "exited", "exit_code": 0}
    return api, body


def test_an_exit_reported_twice_is_recorded_both_times(placed):
    api, body = placed
    assert api.request("POST", "/v4/agent/reports", AGENT, json=body).status_code == 200
    assert api.request("POST", "/v4/agent/reports", AGENT, json=body).status_code == 200


def test_a_report_for_an_older_epoch_is_fenced_with_its_own_code(placed):
    api, body = placed
    stale = api.request("POST", "/v4/agent/reports", AGENT, json={**body, "epoch": body["epoch"] - 1})
    assert stale.status_code == 409 and stale.json()["code"] == "stale_epoch"


def test_a_report_that_keeps_losing_write_races_answers_503_with_retry_after(placed):
    api, body = placed

    def always_busy(*args, **kwargs):
        raise Busy("report kept meeting concurrent writes; try again")

    api.services.roving.report = always_busy
    answer = api.request("POST", "/v4/agent/reports", AGENT, json=body)
    assert (answer.status_code, answer.json()["code"], answer.headers["retry-after"]) == (503, "busy", "1")


@pytest.mark.parametrize("wait", ["-1", "31", "soon", "nan", "inf"])
def test_an_assignment_poll_with_a_bad_wait_is_refused_naming_wait(placed, wait):
    api, body = placed
    answer = api.request("GET", "/v4/agent/assignments", AGENT, params={"node_id": body["node_id"], "wait": wait})
    assert answer.status_code == 400 and answer.json()["errors"][0]["path"] == "wait"


def test_an_assignment_poll_answers_its_work_with_an_etag_that_names_the_answer(placed):
    api, body = placed
    api.services.tailer.wait_for(api.services.roving.last_position)
    first = api.request("GET", "/v4/agent/assignments", AGENT, params={"node_id": body["node_id"], "wait": "0"})
    assert [s["allocation_id"] for s in first.json()["start"]] == [body["allocation_id"]]
    assert api.request("POST", "/v4/agent/reports", AGENT, json=body).status_code == 200
    api.services.tailer.wait_for(api.services.roving.last_position)
    after = api.request("GET", "/v4/agent/assignments", AGENT, params={"node_id": body["node_id"]})
    views = api.services.views
    assert after.json() == {"start": [], "stop": [], "volumes": [], "position": views.position}
    assert first.headers["etag"] != after.headers["etag"]
    assert first.json()["position"] < after.json()["position"], "a later answer names a later log position"


def test_a_started_report_for_the_running_placement_is_acknowledged_from_the_views(placed):
    api, body = placed
    api.services.tailer.wait_for(api.services.roving.last_position)

    def must_not_be_asked(*args, **kwargs):
        raise AssertionError("the application was asked about a report the views could answer")

    api.services.roving.report = must_not_be_asked
    answer = api.request("POST", "/v4/agent/reports", AGENT, json={**body, "event": "started"})
    assert answer.status_code == 200


def test_a_started_report_for_an_older_epoch_is_still_fenced(placed):
    api, body = placed
    api.services.tailer.wait_for(api.services.roving.last_position)
    stale = api.request("POST", "/v4/agent/reports", AGENT, json={**body, "event": "started", "epoch": body["epoch"] - 1})
    assert stale.status_code == 409 and stale.json()["code"] == "stale_epoch"


def test_a_started_report_after_the_allocation_ended_is_fenced(placed):
    api, body = placed
    assert api.request("POST", "/v4/agent/reports", AGENT, json=body).status_code == 200
    api.services.tailer.wait_for(api.services.roving.last_position)
    late = api.request("POST", "/v4/agent/reports", AGENT, json={**body, "event": "started"})
    assert late.status_code == 409 and late.json()["code"] == "stale_epoch"


def test_a_batch_of_reports_answers_each_in_order_as_the_single_route_would(placed):
    api, body = placed
    stale = {**body, "epoch": body["epoch"] - 1}
    unknown = {**body, "allocation_id": "00000000-0000-0000-0000-000000000001"}
    answer = api.request("POST", "/v4/agent/reports:batch", AGENT,
                         json={"node_id": body["node_id"], "reports": [body, stale, unknown, body]})
    assert answer.status_code == 200
    results = answer.json()["results"]
    assert [r["status"] for r in results] == [200, 409, 404, 200]
    assert results[1]["code"] == "stale_epoch"
    events = api.services.roving.repository.event_store.get(UUID(body["allocation_id"]))
    assert [type(e).__qualname__ for e in events].count("Allocation.Ended") == 1  # the repeat is recorded once


def test_a_batch_naming_another_nodes_report_is_refused_naming_reports(placed):
    api, body = placed
    other = {**body, "node_id": "00000000-0000-0000-0000-000000000002"}
    answer = api.request("POST", "/v4/agent/reports:batch", AGENT, json={"node_id": body["node_id"], "reports": [other]})
    assert answer.status_code == 400 and answer.json()["errors"][0]["path"] == "reports"


def test_a_batch_that_keeps_losing_write_races_answers_503_so_every_report_is_tried_again(placed):
    api, body = placed

    def always_busy(*args, **kwargs):
        raise Busy("report_all kept meeting concurrent writes; try again")

    api.services.roving.report_all = always_busy
    answer = api.request("POST", "/v4/agent/reports:batch", AGENT, json={"node_id": body["node_id"], "reports": [body]})
    assert (answer.status_code, answer.headers["retry-after"]) == (503, "1")


@pytest.mark.parametrize("route", ["/v4/agent/reports", "/v4/agent/reports:batch"])
def test_a_megabyte_exit_reason_is_recorded_cut_to_its_bound_not_refused(placed, route):
    """Cut, not refused: an agent drops a report the control plane refuses, and the stage would lose its exit."""
    api, body = placed
    roving, recorded = api.services.roving, []
    single, batch = roving.report, roving.report_all
    roving.report = lambda *args: recorded.append(args[5]) or single(*args)
    roving.report_all = lambda node, reports, at: recorded.extend(r.reason for r in reports) or batch(node, reports, at)
    report = {**body, "exit_code": 3, "reason": "disk on fire " + "x" * 2**20}
    sent = report if route.endswith("reports") else {"node_id": body["node_id"], "reports": [report]}
    answer = api.request("POST", route, AGENT, json=sent)
    assert answer.status_code == 200 and answer.json().get("results", [{"status": 200}])[0]["status"] == 200
    [told] = recorded
    assert told.startswith("disk on fire ") and len(told) == MAX_REPORT_REASON and told.endswith("characters cut)")


@pytest.mark.parametrize("field, value", [
    ("annotations", {f"k{n}": "v" for n in range(MAX_NODE_ANNOTATIONS + 1)}),
    ("annotations[...]", {"notes": "x" * 2**20}),
    ("definition", "d" * 100_000),
    ("address", "a" * 100_000),
])
def test_a_registration_past_a_bound_is_a_400_naming_the_field(field, value):
    answer = Api().request("POST", "/v4/agent/register", AGENT, json={**REGISTER, field.removesuffix("[...]"): value})
    assert answer.status_code == 400, answer.text
    assert answer.json()["errors"][0]["path"] == field

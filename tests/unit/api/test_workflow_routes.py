"""Workflow routes answer in the Contract's shapes, name bad fields, and never show one tenant's work to another."""

import asyncio
import threading

import httpx
import pytest

from tests.unit.api.harness import JOB, Api


@pytest.fixture(scope="module")
def api():
    return Api()


@pytest.fixture(scope="module")
def alice(api):
    return api.organization_with_user("acme", "alice")[1]


@pytest.fixture(scope="module")
def bob(api):
    return api.organization_with_user("globex", "bob")[1]


@pytest.fixture(scope="module")
def workflow(api, alice):
    answer = api.request("POST", "/v4/workflows", alice, json={"name": "hello", "definition": JOB})
    assert answer.status_code == 201, answer.text
    return answer.json()["id"]


def test_a_submitted_workflow_is_readable_right_away_in_the_contract_shape(api, alice, workflow):
    answer = api.request("GET", f"/v4/workflows/{workflow}", alice).json()
    assert {"id", "name", "status", "stages"} <= set(answer)
    assert answer["name"] == "hello"
    stage = answer["stages"][0]
    assert {"name", "kind", "status", "attempts", "exit_code", "node", "reason"} <= set(stage)
    assert (stage["name"], stage["status"]) == ("hello", "READY")


def test_a_raw_yaml_body_is_accepted(api, alice):
    answer = api.request("POST", "/v4/workflows?name=raw&priority=-1", alice, content=JOB.encode(),
                         headers={"Content-Type": "application/yaml"})
    assert answer.status_code == 201
    assert api.request("GET", f"/v4/workflows/{answer.json()['id']}", alice).json()["name"] == "raw"


def test_a_definition_given_as_an_object_is_accepted(api, alice):
    import yaml
    answer = api.request("POST", "/v4/workflows", alice, json={"definition": yaml.safe_load(JOB)})
    assert answer.status_code == 201


def test_an_invalid_fuzzfile_gets_400_with_paths(api, alice):
    answer = api.request("POST", "/v4/workflows", alice, json={"definition": "version: v4\njobs: {a: {}}\n"})
    assert answer.status_code == 400
    assert all({"path", "message"} <= set(e) for e in answer.json()["errors"])


def test_a_wrongly_typed_field_is_named(api, alice):
    answer = api.request("POST", "/v4/workflows", alice, json={"definition": JOB, "priority": "high"})
    assert answer.status_code == 400 and answer.json()["errors"][0]["path"] == "priority"


def test_the_list_shows_your_workflows_and_hides_other_tenants(api, alice, bob, workflow):
    assert workflow in [w["id"] for w in api.request("GET", "/v4/workflows", alice).json()["workflows"]]
    assert workflow not in [w["id"] for w in api.request("GET", "/v4/workflows", bob).json()["workflows"]]


@pytest.mark.parametrize("suffix", ["", "/events", "/why", "/log/hello"])
def test_another_tenant_gets_404_not_403(api, bob, workflow, suffix):
    answer = api.request("GET", f"/v4/workflows/{workflow}{suffix}", bob)
    assert answer.status_code == 404 and workflow not in answer.text


def test_an_unknown_or_malformed_id_is_404(api, alice):
    assert api.request("GET", "/v4/workflows/not-a-uuid", alice).status_code == 404
    assert api.request("GET", "/v4/workflows/00000000-0000-0000-0000-000000000000", alice).status_code == 404


def test_events_read_as_sentences(api, alice, workflow):
    events = api.request("GET", f"/v4/workflows/{workflow}/events", alice).json()["events"]
    assert events[0]["message"] == "Submitted by alice"
    assert all({"time", "type", "stage", "message"} <= set(e) for e in events)


def test_why_lists_each_waiting_stage(api, alice, workflow):
    stages = api.request("GET", f"/v4/workflows/{workflow}/why", alice).json()["stages"]
    assert [s["stage"] for s in stages] == ["hello"]
    assert {"stage", "allocation_id", "reason", "detail"} <= set(stages[0])


def test_the_stage_log_comes_back_as_text(api, alice, workflow):
    api.services.logs.lines[(workflow, "hello")] = b"hello\n"
    answer = api.request("GET", f"/v4/workflows/{workflow}/log/hello", alice)
    assert answer.status_code == 200 and answer.text == "hello\n"
    assert answer.headers["content-type"].startswith("text/plain")


def test_stopping_cancels_and_the_event_stream_then_ends(api, alice):
    wid = api.request("POST", "/v4/workflows", alice, json={"definition": JOB}).json()["id"]
    assert api.request("PATCH", f"/v4/workflows/{wid}:stop", alice).status_code == 200
    assert api.request("GET", f"/v4/workflows/{wid}", alice).json()["status"] == "CANCELED"
    stream = api.request("GET", f"/v4/workflows/{wid}/events?follow=true", alice)
    assert stream.headers["content-type"].startswith("text/event-stream")
    assert "event: activity" in stream.text and stream.text.rstrip().endswith('data: {"status":"CANCELED"}')


def test_another_tenant_cannot_stop_your_workflow(api, bob, workflow):
    assert api.request("POST", f"/v4/workflows/{workflow}:stop", bob).status_code == 404


def test_the_queue_shows_only_your_own_work_unless_you_are_admin(api, alice, bob, workflow):
    mine = api.request("GET", "/v4/scheduler/queue?mine=false", bob).json()
    assert mine["mine"] is True and all(r["workflow_id"] != workflow for r in mine["queue"])
    everyone = api.request("GET", "/v4/scheduler/queue", api.admin).json()
    assert everyone["mine"] is False and any(r["workflow_id"] == workflow for r in everyone["queue"])


def test_a_bad_queue_filter_is_named(api, alice):
    answer = api.request("GET", "/v4/scheduler/queue?priority_min=lots", alice)
    assert answer.status_code == 400 and answer.json()["errors"][0]["path"] == "priority_min"


def test_a_name_too_long_for_one_log_message_is_named(api, alice):
    answer = api.request("POST", "/v4/workflows", alice, json={"name": "n" * 1_000_000, "definition": JOB})
    assert answer.status_code == 400 and answer.json()["errors"][0]["path"] == "name"
    raw = api.request("POST", "/v4/workflows?name=" + "n" * 300, alice, content=JOB.encode(),
                      headers={"Content-Type": "application/yaml"})
    assert raw.status_code == 400 and raw.json()["errors"][0]["path"] == "name"


def test_a_workflow_priority_below_the_range_is_named(api, alice):
    answer = api.request("POST", "/v4/workflows", alice, json={"definition": JOB, "priority": -(2**62)})
    assert answer.status_code == 400 and answer.json()["errors"][0]["path"] == "priority"


@pytest.mark.parametrize("query, field", [("status=BOGUS", "status"), ("order_by=newest", "order_by"),
                                          ("stauts=FAILED", "stauts")])
def test_a_bad_or_unknown_list_filter_is_a_400_naming_it(api, alice, query, field):
    answer = api.request("GET", f"/v4/workflows?{query}", alice)
    assert answer.status_code == 400, answer.text
    assert answer.json()["errors"][0]["path"] == field


def test_newest_first_and_a_lower_case_status_are_understood(api, alice, workflow):
    answer = api.request("GET", "/v4/workflows?status=pending&order_by=-submitted", alice)
    assert answer.status_code == 200 and workflow in [w["id"] for w in answer.json()["workflows"]]


def test_a_reconnecting_event_stream_resumes_after_the_last_event_id(api, alice):
    wid = api.request("POST", "/v4/workflows", alice, json={"definition": JOB}).json()["id"]
    api.request("PATCH", f"/v4/workflows/{wid}:stop", alice)
    whole = api.request("GET", f"/v4/workflows/{wid}/events?follow=true", alice).text
    ids = [int(line[4:]) for line in whole.splitlines() if line.startswith("id: ")]
    assert ids == list(range(1, len(ids) + 1)) and len(ids) >= 2
    rest = api.request("GET", f"/v4/workflows/{wid}/events?follow=true", alice,
                       headers={"Last-Event-ID": str(ids[-2])}).text
    assert [line for line in rest.splitlines() if line.startswith("id: ")] == [f"id: {ids[-1]}"]
    assert rest.rstrip().endswith('data: {"status":"CANCELED"}')
    bad = api.request("GET", f"/v4/workflows/{wid}/events?follow=true", alice, headers={"Last-Event-ID": "x"})
    assert bad.status_code == 400 and bad.json()["errors"][0]["path"] == "Last-Event-ID"


class StalledLogs:
    """A log reader that blocks as the real one does while the log is unreachable (it retries for up to 60 s)."""

    def __init__(self) -> None:
        self.entered, self.release, self.returned = threading.Event(), threading.Event(), threading.Event()

    def read(self, workflow_id: str, stage: str) -> bytes:
        self.entered.set()
        self.release.wait(3)  # bounded, so a read wrongly run on the event loop fails the test instead of hanging it
        self.returned.set()
        return b"late\n"


def test_a_stalled_log_read_does_not_hold_other_requests(api, alice, workflow):
    stalled = api.services.logs = StalledLogs()

    async def scenario() -> tuple[bool, int, str]:
        transport = httpx.ASGITransport(app=api.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://roving.test") as client:
            log = asyncio.create_task(client.get(f"/v4/workflows/{workflow}/log/hello",
                                                 headers={"Authorization": f"Bearer {alice}"}))
            await asyncio.to_thread(stalled.entered.wait, 3)
            health = await client.get("/healthz")
            behind = stalled.returned.is_set()  # a read on the loop holds everything until it returns
            stalled.release.set()
            answer = await log
            return behind, health.status_code, answer.text

    behind, status, text = asyncio.run(scenario())
    assert status == 200 and not behind, "/healthz waited behind a log read"
    assert text == "late\n"

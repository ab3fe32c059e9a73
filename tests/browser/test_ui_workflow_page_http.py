"""The workflow page follows the workflow's state over HTTP in-process: the live part it re-renders carries the
actions (no Stop once it ended), the workflow's duration, and downloads of its events and its stages' logs."""

from __future__ import annotations

import json

from tests.browser.test_ui_http import session
from tests.unit.api.harness import JOB, Api


def test_the_live_part_drops_stop_when_the_workflow_ends_while_the_page_is_open():
    api = Api()
    cookie = session(api)
    workflow = api.request("POST", "/v4/workflows", api.admin, json={"name": "live", "definition": JOB}).json()["id"]
    live = api.request("GET", f"/ui/workflows/{workflow}/summary", headers=cookie).text
    assert 'id="stop"' in live and 'id="resubmit"' in live
    api.request("PATCH", f"/v4/workflows/{workflow}:stop", api.admin)
    ended = api.request("GET", f"/ui/workflows/{workflow}/summary", headers=cookie).text
    assert 'id="stop"' not in ended and 'id="resubmit"' in ended


def test_the_page_shows_how_long_the_workflow_has_taken():
    api = Api()
    cookie = session(api)
    workflow = api.request("POST", "/v4/workflows", api.admin, json={"name": "d", "definition": JOB}).json()["id"]
    page = api.request("GET", f"/ui/workflows/{workflow}", headers=cookie).text
    shown = page.split('id="workflow-duration">')[1].split("</dd>")[0]
    assert shown.endswith("s so far")
    api.request("PATCH", f"/v4/workflows/{workflow}:stop", api.admin)
    page = api.request("GET", f"/ui/workflows/{workflow}", headers=cookie).text
    assert "so far" not in page.split('id="workflow-duration">')[1].split("</dd>")[0]


def test_events_and_logs_download_as_files():
    api = Api()
    cookie = session(api)
    workflow = api.request("POST", "/v4/workflows", api.admin, json={"name": "f", "definition": JOB}).json()["id"]
    page = api.request("GET", f"/ui/workflows/{workflow}", headers=cookie).text
    assert f'href="/ui/workflows/{workflow}/download/events"' in page
    assert f'href="/ui/workflows/{workflow}/download/logs/hello"' in page
    events = api.request("GET", f"/ui/workflows/{workflow}/download/events", headers=cookie)
    assert events.status_code == 200
    assert events.headers["content-disposition"] == f'attachment; filename="workflow-{workflow}-events.json"'
    assert json.loads(events.text)["events"][0]["type"] == "Workflow.Submitted"
    log = api.request("GET", f"/ui/workflows/{workflow}/download/logs/hello", headers=cookie)
    assert log.status_code == 200 and log.headers["content-disposition"] == f'attachment; filename="{workflow}-hello.log"'


def test_another_tenant_cannot_download_the_events():
    api = Api()
    api.organization_with_user("other", "eve")
    workflow = api.request("POST", "/v4/workflows", api.admin, json={"name": "s", "definition": JOB}).json()["id"]
    answer = api.request("GET", f"/ui/workflows/{workflow}/download/events", headers=session(api, "eve"))
    assert answer.status_code in (403, 404) and "Workflow.Submitted" not in answer.text

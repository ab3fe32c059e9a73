"""The UI acts, over HTTP in-process: submit (validated by the API's own check), stop, submit again; the Audit link
only for those who may read it; a tenant's dashboard labelled and counting only their work; charts from the log."""

from __future__ import annotations

import re

from tests.browser.test_ui_http import csrf, session
from tests.unit.api.harness import JOB, PASSWORD, Api

BROKEN = "version: v4\njobs:\n  a:\n    image: {uri: docker://alpine}\n    script: x\n    script: y\n"


def form(api: Api, path: str, cookie: dict[str, str], page: str, **fields: str):
    return api.request("POST", path, data={"csrf": csrf(page), **fields}, headers=cookie)


def test_submitting_a_fuzzfile_from_the_ui_creates_the_workflow_and_shows_it():
    api = Api()
    cookie = session(api)
    page = api.request("GET", "/ui/submit", headers=cookie).text
    assert 'id="definition"' in page and 'id="upload"' in page
    answer = form(api, "/ui/submit", cookie, page, definition=JOB, name="from-the-ui")
    assert answer.status_code == 303
    workflow = answer.headers["location"].rsplit("/", 1)[1]
    assert api.request("GET", f"/v4/workflows/{workflow}", api.admin).json()["name"] == "from-the-ui"


def test_a_refused_fuzzfile_comes_back_with_its_problems_beside_it():
    api = Api()
    cookie = session(api)
    page = api.request("GET", "/ui/submit", headers=cookie).text
    answer = form(api, "/ui/submit", cookie, page, definition=BROKEN, name="dup")
    assert answer.status_code == 400
    assert "duplicate key `script`" in answer.text and "again at line 6" in answer.text
    assert api.request("GET", "/v4/workflows", api.admin).json()["workflows"] == []


def test_the_submit_page_checks_as_you_type_with_the_api_validate_answer():
    api = Api()
    cookie = session(api)
    page = api.request("GET", "/ui/submit", headers=cookie).text
    found = form(api, "/ui/submit/validate", cookie, page, definition=BROKEN).json()
    assert found["valid"] is False and "duplicate key" in found["errors"][0]["message"]
    assert form(api, "/ui/submit/validate", cookie, page, definition=JOB).json()["valid"] is True
    assert api.request("POST", "/ui/submit/validate", data={"definition": JOB}, headers=cookie).status_code == 403


def test_stop_and_submit_again_from_the_workflow_page():
    api = Api()
    cookie = session(api)
    workflow = api.request("POST", "/v4/workflows", api.admin, json={"name": "again", "definition": JOB}).json()["id"]
    page = api.request("GET", f"/ui/workflows/{workflow}", headers=cookie).text
    assert 'id="stop"' in page and 'id="resubmit"' in page
    stopped = form(api, f"/ui/workflows/{workflow}/stop", cookie, page)
    assert stopped.status_code == 303 and stopped.headers["location"].endswith("?done=stopped")
    assert api.request("GET", f"/v4/workflows/{workflow}", api.admin).json()["status"] == "CANCELED"
    ended = api.request("GET", f"/ui/workflows/{workflow}", headers=cookie).text
    assert 'id="stop"' not in ended and "Stop requested" in api.request(
        "GET", stopped.headers["location"], headers=cookie).text
    again = form(api, f"/ui/workflows/{workflow}/resubmit", cookie, ended)
    fresh = again.headers["location"].split("?")[0].rsplit("/", 1)[1]
    assert fresh != workflow
    assert api.request("GET", f"/v4/workflows/{fresh}", api.admin).json()["name"] == "again"


def test_a_stage_that_never_ran_shows_no_attempts_no_times():
    api = Api()
    cookie = session(api)
    workflow = api.request("POST", "/v4/workflows", api.admin, json={"name": "w", "definition": JOB}).json()["id"]
    page = api.request("GET", f"/ui/workflows/{workflow}", headers=cookie).text
    headers = re.findall(r"<th>([^<]+)</th>", page.split('id="stages"')[1].split("</thead>")[0])
    assert headers[5:9] == ["Attempts", "Started", "Ended", "Duration"]
    cells = re.findall(r"<td>(.*?)</td>", page.split('id="stages"')[1].split("</tr>")[1])
    assert cells[5:9] == ["—", "", "", ""]
    assert f"/ui/workflows/{workflow}/events?since=" in page


def test_the_audit_link_is_shown_only_to_those_who_may_read_the_audit():
    api = Api()
    api.organization_with_user("acme", "alice")
    admin_page = api.request("GET", "/ui/workflows", headers=session(api)).text
    user_page = api.request("GET", "/ui/workflows", headers=session(api, "alice")).text
    assert 'href="/ui/audit"' in admin_page and 'href="/ui/audit"' not in user_page


def test_a_tenant_dashboard_says_it_counts_their_own_work_and_charts_it():
    api = Api()
    _, alice = api.organization_with_user("acme", "alice")
    api.request("POST", "/v4/workflows", api.admin, json={"name": "admins", "definition": JOB})
    api.request("POST", "/v4/workflows", alice, json={"name": "alices", "definition": JOB})
    mine = api.request("GET", "/ui/", headers=session(api, "alice")).text
    assert "your work only (alice)" in mine
    assert 'id="chart-queue"' in mine and 'id="chart-cpu"' in mine and "From the log." in mine
    waiting = re.search(r'data-series="waiting" data-last="([0-9.]+)"', mine).group(1)
    assert float(waiting) == 1.0  # alice's one waiting allocation, not the admin's too
    everyone = api.request("GET", "/ui/", headers=session(api)).text
    assert "the whole cluster" in everyone
    assert float(re.search(r'data-series="waiting" data-last="([0-9.]+)"', everyone).group(1)) == 2.0
    assert PASSWORD not in mine


def test_the_submit_pages_check_warns_that_a_job_without_an_execute_timeout_cannot_backfill():
    api = Api()
    cookie = session(api)
    page = api.request("GET", "/ui/submit", headers=cookie).text
    checked = form(api, "/ui/submit/validate", cookie, page, definition=JOB)
    assert checked.status_code == 200
    assert "jobs.hello.policy.timeout.execute" in [w["path"] for w in checked.json()["warnings"]]

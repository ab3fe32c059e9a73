"""The UI's workflow list pages (a Next link while more remain) and searches by name, through the API's cursor."""

from __future__ import annotations

import re

from api.http.ui import workflows as ui_workflows
from tests.browser.test_ui_http import session
from tests.unit.api.harness import JOB, Api


def names_on(page: str) -> list[str]:
    return re.findall(r'<a href="/ui/workflows/[0-9a-f-]+">([^<]+)</a>', page)


def test_the_workflow_list_pages_with_a_next_link_and_searches_by_name(monkeypatch):
    monkeypatch.setattr(ui_workflows, "UI_PAGE", 2)
    api = Api()
    for name in ("job-a", "job-b", "job-c", "other"):
        api.request("POST", "/v4/workflows", api.admin, json={"name": name, "definition": JOB})
    cookie = session(api)
    first = api.request("GET", "/ui/workflows?q=job", headers=cookie).text
    assert names_on(first) == ["job-c", "job-b"] and 'id="search" value="job"' in first
    link = re.search(r'id="next-page" href="([^"]+)"', first).group(1).replace("&amp;", "&")
    second = api.request("GET", link, headers=cookie).text
    assert names_on(second) == ["job-a"] and 'id="next-page"' not in second
    assert names_on(api.request("GET", "/ui/workflows?q=OTH", headers=cookie).text) == ["other"]


def test_a_workflow_that_left_memory_still_has_its_page_and_submits_again():
    from tests.browser.test_ui_actions_http import form
    api = Api()
    api.services.views.hot_workflows = 0  # every finished workflow goes cold at once
    cookie = session(api)
    workflow = api.request("POST", "/v4/workflows", api.admin, json={"name": "old-one", "definition": JOB}).json()["id"]
    assert api.request("PATCH", f"/v4/workflows/{workflow}:stop", api.admin).status_code == 200
    assert api.services.views.workflows.workflow(workflow) is None
    page = api.request("GET", f"/ui/workflows/{workflow}", headers=cookie)
    assert page.status_code == 200 and "old-one" in page.text and 'id="resubmit"' in page.text
    again = form(api, f"/ui/workflows/{workflow}/resubmit", cookie, page.text)
    assert again.status_code == 303, again.text
    fresh = again.headers["location"].split("?")[0].rsplit("/", 1)[1]
    assert api.request("GET", f"/v4/workflows/{fresh}", api.admin).json()["name"] == "old-one"

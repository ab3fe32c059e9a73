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

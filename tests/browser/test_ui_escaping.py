"""Names a person or a catalog source chose, shown as text on every UI page that shows them: the Jinja2
templates' autoescape, never a hand-made decision per fragment."""

from __future__ import annotations

import pytest

from tests.browser.test_ui_http import csrf, session
from tests.catalog_fixtures import MARKDOWN_APP, write_app
from tests.unit.api.harness import JOB, Api

SCRIPT = "<script>document.title='pwned'</script>"
SHOWN = "&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;"


@pytest.fixture
def api(tmp_path) -> Api:
    api = Api()
    files = {**MARKDOWN_APP,
             "metadata": f"name: \"Greeter {SCRIPT}\"\ncategory: \"Ex {SCRIPT}\"\ndescription: plain\n",
             "values": MARKDOWN_APP["values"].replace("display_category: Job", f'display_category: "Job {SCRIPT}"')
                                             .replace("display_name: What to say", f'display_name: "Say {SCRIPT}"')}
    added = api.request("POST", "/v4/catalog/sources", api.admin,
                        json={"name": "apps", "location": str(write_app(tmp_path / "apps", "greeter", files)),
                              "scope": "cluster"})
    assert added.status_code == 201, added.text
    return api


def shows_as_text(text: str, where: str, times: int = 1) -> None:
    assert SCRIPT not in text, f"{where} carries the name as markup"
    assert text.count(SHOWN) >= times, f"{where} does not show the name as text"


def test_a_catalog_templates_name_category_and_inputs_show_as_text_on_the_catalog_pages(api):
    cookie = session(api)
    listed = api.request("GET", "/ui/catalog", headers=cookie)
    shows_as_text(listed.text, "the catalog page", times=3)  # its card's title, category, and the category filter
    form = api.request("GET", "/ui/catalog/greeter?source=apps", headers=cookie)
    shows_as_text(form.text, "the run form", times=4)  # <title>, <h1>, the input's label, its fieldset


def test_a_workflow_name_shows_as_text_on_the_list_the_workflow_page_and_its_live_summary(api):
    cookie = session(api)
    form = api.request("GET", "/ui/catalog/greeter?source=apps", headers=cookie).text
    started = api.request("POST", "/ui/catalog/greeter/start", headers=cookie, data={
        "csrf": csrf(form), "source": "apps", "v.Greeting": "hi", "v.Cores": "1", "workflow_name": SCRIPT})
    assert started.status_code == 303, started.text
    by_api = api.request("POST", "/v4/workflows", api.admin, json={"definition": JOB, "name": SCRIPT})
    assert by_api.status_code == 201, by_api.text
    shows_as_text(api.request("GET", "/ui/workflows", headers=cookie).text, "the workflow list", times=2)
    searched = api.request("GET", "/ui/workflows", params={"q": SCRIPT[:7]}, headers=cookie).text
    shows_as_text(searched, "a search", times=2)
    assert 'id="search" value="&lt;script"' in searched  # the search box keeps the words, as text
    for location in (started.headers["location"], f"/ui/workflows/{by_api.json()['id']}"):
        shows_as_text(api.request("GET", location, headers=cookie).text, location, times=2)  # <title> and <h1>
        summary = api.request("GET", f"{location}/summary", headers=cookie)
        assert summary.status_code == 200 and SCRIPT not in summary.text

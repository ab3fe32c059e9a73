"""The Catalog page over HTTP in-process: search, a run form per template grouped by display_category, Markdown
descriptions without script or javascript: links, Start as the signed-in person, and tenants kept apart."""

from __future__ import annotations

import re
import shutil

import pytest

from tests.browser.test_ui_http import csrf, session
from tests.catalog_fixtures import reference_folder, write_app
from tests.unit.api.harness import Api


@pytest.fixture
def api(tmp_path) -> Api:
    api = Api()
    for name, folder in (("apps", write_app(tmp_path / "apps", "greeter")),
                         ("reference", reference_folder(tmp_path / "ref", "hello_world")),
                         ("broken", reference_folder(tmp_path / "broken", "blender"))):
        added = api.request("POST", "/v4/catalog/sources", api.admin,
                            json={"name": name, "location": str(folder), "scope": "cluster"})
        assert added.status_code == 201, added.text
    shutil.rmtree(tmp_path / "broken")
    return api


def page(api, path, who="admin"):
    answer = api.request("GET", path, headers=session(api, who) if who == "admin" else who)
    assert answer.status_code == 200, answer.text
    return answer.text


def test_the_catalog_page_lists_and_searches_templates_and_names_the_unreadable_source(api):
    text = page(api, "/ui/catalog")
    assert re.findall(r'data-key="([^"]+)"', text) == ["apps/greeter", "reference/hello_world"]
    assert "Catalog source broken (cluster) could not be read" in text
    assert re.findall(r'data-key="([^"]+)"', page(api, "/ui/catalog?q=shell")) == ["apps/greeter"]
    assert '<a href="/ui/catalog"' in text  # the nav link


def test_a_markdown_description_renders_without_script_or_javascript_links(api):
    text = page(api, "/ui/catalog/greeter?source=apps")
    description = text.split('<section id="description">')[1].split("</section>")[0]
    assert "<strong>hello</strong>" in description
    assert "<script" not in description and "&lt;script&gt;" in description
    assert 'href="javascript:' not in description and 'href="https://example.org/docs"' in description


def test_the_run_form_groups_inputs_by_display_category(api):
    text = page(api, "/ui/catalog/hello_world")
    assert re.findall(r'<legend>([^<]+)</legend>', text) == ["Container", "Execution", "Resources", "Commands"]
    assert 'type="number" min="0" step="1" id="input-Cores" name="v.Cores" value="1"' in text


def test_start_submits_as_the_signed_in_person_and_opens_the_workflow(api):
    cookie = session(api)
    form = api.request("GET", "/ui/catalog/greeter?source=apps", headers=cookie).text
    answer = api.request("POST", "/ui/catalog/greeter/start", headers=cookie, data={
        "csrf": csrf(form), "source": "apps", "v.Greeting": "hi", "v.Cores": "1", "workflow_name": "from-ui"})
    assert answer.status_code == 303 and answer.headers["location"].startswith("/ui/workflows/")
    workflow = answer.headers["location"].rsplit("/", 1)[1]
    shown = api.request("GET", f"/v4/workflows/{workflow}", api.admin).json()
    assert shown["name"] == "from-ui" and shown["submitted_by"] == "admin"


def test_a_refused_start_shows_the_form_again_with_the_refusal_beside_the_field_it_names(api):
    cookie = session(api)
    form = api.request("GET", "/ui/catalog/greeter?source=apps", headers=cookie).text
    answer = api.request("POST", "/ui/catalog/greeter/start", headers=cookie, data={
        "csrf": csrf(form), "source": "apps", "v.Cores": "lots", "v.Greeting": "kept", "workflow_name": "mine"})
    assert answer.status_code == 400 and 'id="run-form"' in answer.text  # the form, not a bare "Error" page
    cores = answer.text.split('id="input-Cores"')[1].split("</label>")[0]
    assert 'value="lots"' in cores and "expected a whole number" in cores and 'class="error field-error"' in cores
    assert 'value="kept"' in answer.text.split('id="input-Greeting"')[1].split("</label>")[0]
    assert 'id="workflow-name" value="mine"' in answer.text


def test_the_catalog_filters_by_category_and_counts_in_words(api):
    text = page(api, "/ui/catalog")
    assert re.findall(r"<option>([^<]+)</option>", text.split('id="catalog-category"')[1].split("</select>")[0])
    assert '<span class="hint" id="catalog-count">2 templates</span>' in text
    only = page(api, "/ui/catalog?category=Examples")
    assert re.findall(r'data-key="([^"]+)"', only) == ["apps/greeter"]
    assert '<span class="hint" id="catalog-count">1 template</span>' in only and "<option selected>Examples" in only


def test_a_start_without_the_forms_csrf_token_is_refused(api):
    answer = api.request("POST", "/ui/catalog/greeter/start", headers=session(api), data={"source": "apps"})
    assert answer.status_code == 403

"""The workflow page's "edit and resubmit" and "retry failed stages" over HTTP in-process: the edit form prefilled
with the Fuzzfile, a refused edit shown again with its problems, retry only on a failed workflow, each a new
workflow of the signed-in person; another tenant's workflow cannot be opened for editing."""

from __future__ import annotations

import html

from tests.browser.test_ui_http import csrf, session
from tests.unit.api.test_resubmit_routes import alice, api, bob, failed  # noqa: F401 - the shared fixtures


def summary(api, cookie, workflow):  # noqa: F811
    return api.request("GET", f"/ui/workflows/{workflow}/summary", headers=cookie).text


def test_retry_shows_on_a_failed_workflow_only_and_opens_the_new_workflow_of_its_unfinished_jobs(api, failed):  # noqa: F811
    cookie = session(api)
    page = summary(api, cookie, failed)
    assert 'id="retry"' in page and 'id="edit-resubmit"' in page and 'id="stop"' not in page
    answer = api.request("POST", f"/ui/workflows/{failed}/retry", headers=cookie, data={"csrf": csrf(page)})
    assert answer.status_code == 303 and answer.headers["location"].endswith("?done=retried")
    new = answer.headers["location"].split("/ui/workflows/")[1].split("?")[0]
    shown = api.request("GET", answer.headers["location"], headers=cookie).text
    assert "runs the jobs that did not finish" in shown
    assert [s["name"] for s in api.request("GET", f"/v4/workflows/{new}", api.admin).json()["stages"]] == ["train"]
    assert 'id="retry"' not in summary(api, cookie, new)  # it waits: nothing to retry yet, Stop instead
    assert 'id="stop"' in summary(api, cookie, new)


def test_edit_and_resubmit_opens_the_fuzzfile_prefilled_and_submits_the_edit(api, failed):  # noqa: F811
    cookie = session(api)
    form = api.request("GET", f"/ui/workflows/{failed}/edit", headers=cookie)
    assert form.status_code == 200
    text = html.unescape(form.text.split('id="definition"')[1].split(">", 1)[1].split("</textarea>")[0])
    assert "exit 3" in text and "prepare:" in text
    assert 'id="name" value="pipeline"' in form.text and f'action="/ui/workflows/{failed}/edit"' in form.text
    answer = api.request("POST", f"/ui/workflows/{failed}/edit", headers=cookie, data={
        "csrf": csrf(form.text), "name": "edited", "definition": text.replace("exit 3", "echo fixed")})
    assert answer.status_code == 303 and answer.headers["location"].endswith("?done=resubmitted")
    new = answer.headers["location"].split("/ui/workflows/")[1].split("?")[0]
    made = api.request("GET", f"/v4/workflows/{new}/definition", api.admin).json()
    assert made["name"] == "edited" and "echo fixed" in made["definition"]
    assert api.request("GET", f"/v4/workflows/{new}", api.admin).json()["submitted_by"] == "admin"


def test_a_refused_edit_comes_back_in_the_form_with_its_problems_and_the_text_kept(api, failed):  # noqa: F811
    cookie = session(api)
    form = api.request("GET", f"/ui/workflows/{failed}/edit", headers=cookie).text
    answer = api.request("POST", f"/ui/workflows/{failed}/edit", headers=cookie, data={
        "csrf": csrf(form), "name": "broken", "definition": "version: v4\njobz: {}\n"})
    assert answer.status_code == 400 and 'id="submit-form"' in answer.text and "jobz" in answer.text
    assert '<li class="error">' in answer.text and 'id="resubmit-of"' in answer.text


def test_another_tenant_cannot_open_the_edit_form_or_retry(api, bob, failed):  # noqa: F811
    cookie = session(api, "bob")
    assert api.request("GET", f"/ui/workflows/{failed}/edit", headers=cookie).status_code == 404
    page = api.request("GET", "/ui/workflows", headers=cookie).text
    answer = api.request("POST", f"/ui/workflows/{failed}/retry", headers=cookie, data={"csrf": csrf(page)})
    assert answer.status_code == 404

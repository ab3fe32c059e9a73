"""Retry and edit-and-resubmit from a failed workflow's page, in a real browser against the README's stack: the
retry runs only the job that failed; the edit form opens on the Fuzzfile, is checked as typed, and its fix runs."""

from __future__ import annotations

import pytest

pytest.importorskip("selenium", reason="browser tests need selenium (the `test` extra)")

from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402 - after the skip
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as seen  # noqa: E402

from tests.browser.test_ui_acting import texts  # noqa: E402
from tests.browser.test_ui_in_browser import admin_password, shown_status, sign_in, wait  # noqa: E402

FAILS = """version: v4
jobs:
  fetch:
    image: {uri: docker://alpine}
    command: ["true"]
    resource: {cpu: {cores: 1}, memory: {size: 32MiB}}
  train:
    image: {uri: docker://alpine}
    command: [sh, -c, "exit 3"]
    depends-on: [{name: fetch, status: FINISHED}]
    resource: {cpu: {cores: 1}, memory: {size: 32MiB}}
"""


def press(browser, element_id: str) -> None:
    """Click the element once it is there, found and clicked in one step: the workflow page re-renders while it
    follows the workflow, and an element found in one WebDriver call can be replaced before the next one clicks."""
    wait(browser).until(lambda b: b.execute_script(
        "const e = document.getElementById(arguments[0]); if (!e || e.disabled) return false; e.click(); return true;",
        element_id))


def workflow_id(browser) -> str:
    """The shown workflow's id; "" while the page is being replaced (the element read went stale)."""
    try:
        return browser.find_element(By.ID, "workflow-id").text
    except StaleElementReferenceException:
        return ""


def test_a_failed_workflow_is_retried_and_resubmitted_with_an_edit_from_its_page(browser, stack):
    failed = stack.client.post("/v4/workflows", json={"name": "fails", "definition": FAILS}).json()["id"]
    sign_in(browser, stack, "admin", admin_password(stack))
    browser.get(f"{stack.url}/ui/workflows/{failed}")
    wait(browser, 60).until(lambda b: shown_status(b) == "FAILED")
    press(browser, "retry")
    wait(browser).until(lambda b: b.find_elements(By.ID, "notice") and workflow_id(b) != failed)
    assert "runs the jobs that did not finish" in browser.find_element(By.ID, "notice").text
    assert [row.split("\t")[0] for row in texts(browser, "#stages tbody tr")] == ["train"]  # fetch finished: not again
    browser.get(f"{stack.url}/ui/workflows/{failed}")
    press(browser, "edit-resubmit")
    editor = wait(browser).until(seen.presence_of_element_located((By.ID, "definition")))
    assert "exit 3" in editor.get_property("value")
    browser.execute_script("const e = document.getElementById('definition'); e.value = e.value.replace('exit 3', "
                           "'exit 0'); e.dispatchEvent(new Event('input'))")
    wait(browser).until(lambda b: b.find_element(By.ID, "validity").text.startswith("Valid"))
    browser.find_element(By.ID, "submit").click()
    wait(browser).until(lambda b: b.find_elements(By.ID, "workflow-id") and workflow_id(b) != failed)
    wait(browser, 60).until(lambda b: shown_status(b) == "FINISHED")
    assert browser.find_elements(By.ID, "stop") == [] and browser.find_elements(By.ID, "retry") == []

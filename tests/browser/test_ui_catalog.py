"""The Catalog page in a real browser: search from the nav, open a template, its run form grouped by display_category,
a Markdown description that runs no script, and Start taking the person to their workflow as it finishes."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("selenium", reason="browser tests need selenium (the `test` extra)")

from selenium.webdriver.common.by import By  # noqa: E402 - after the skip

from tests.browser.test_ui_in_browser import admin_password, replaced, shown_status, sign_in, wait  # noqa: E402
from tests.catalog_fixtures import reference_folder, write_app  # noqa: E402


@pytest.fixture(scope="module")
def sources():
    path = Path(tempfile.mkdtemp(prefix="roving-ui-catalog-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def catalog(stack, sources):
    for name, folder in (("apps", write_app(sources / "apps", "greeter")),
                         ("reference", reference_folder(sources / "ref", "hello_world"))):
        added = stack.client.post("/v4/catalog/sources", json={"name": name, "location": str(folder),
                                                                "scope": "cluster"})
        assert added.status_code == 201, added.text
    return stack


def click_and_wait(browser, element) -> None:
    element.click()
    wait(browser).until(replaced(element))
    wait(browser).until(lambda b: b.execute_script("return document.readyState") == "complete")


def test_a_person_finds_a_template_fills_its_form_and_starts_it(browser, catalog):
    stack = catalog
    sign_in(browser, stack, "admin", admin_password(stack))
    click_and_wait(browser, browser.find_element(By.LINK_TEXT, "Catalog"))
    assert browser.find_element(By.ID, "catalog-count").text == "2 templates"
    browser.find_element(By.ID, "catalog-search").send_keys("shell")
    click_and_wait(browser, browser.find_element(By.ID, "catalog-go"))
    cards = browser.find_elements(By.CSS_SELECTOR, ".catalog-card")
    assert [c.get_attribute("data-key") for c in cards] == ["apps/greeter"]
    assert "hello" in cards[0].find_element(By.TAG_NAME, "strong").text  # Markdown, rendered
    click_and_wait(browser, cards[0].find_element(By.LINK_TEXT, "Greeter"))

    description = browser.find_element(By.ID, "description")
    assert "<script>document.title='pwned'</script>" in description.text  # shown as text, never run
    assert browser.title.startswith("Greeter") and "pwned" not in browser.title
    assert [a.get_attribute("href") for a in description.find_elements(By.TAG_NAME, "a")] == [
        "https://example.org/docs"]  # the javascript: link is left as text
    legends = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#run-form legend")]
    assert legends == ["Container", "Job", "Resources", "Secrets"]
    assert "optional" in browser.find_element(By.CSS_SELECTOR, 'fieldset[data-category="Secrets"]').text

    greeting = browser.find_element(By.ID, "input-Greeting")
    greeting.clear()
    greeting.send_keys("hello-from-the-browser")
    name = browser.find_element(By.ID, "workflow-name")
    name.clear()
    name.send_keys("greeted-in-browser")
    click_and_wait(browser, browser.find_element(By.ID, "start"))
    assert "/ui/workflows/" in browser.current_url
    wait(browser, 60).until(lambda b: shown_status(b) == "FINISHED")
    workflow_id = browser.current_url.rstrip("/").rsplit("/", 1)[1]
    assert "hello-from-the-browser" in stack.stage_log(workflow_id, "greet", "hello-from-the-browser")

"""The UI in a real browser: sign in, watch a workflow finish live, cordon a node, tenants kept apart."""

from __future__ import annotations

import httpx
import pytest

pytest.importorskip("selenium", reason="browser tests need selenium (the `test` extra)")

from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException, WebDriverException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402 - after the skip
from selenium.webdriver.support import expected_conditions as seen  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

PASSWORD = "Correct-Horse-9-battery"
SLEEPER = """
version: v4
jobs:
  first:
    image: {uri: docker://alpine}
    command: [sleep, "1"]
    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}
  second:
    image: {uri: docker://alpine}
    command: [sh, -c, "echo alpha one; echo beta two; echo alpha three"]
    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}
    depends-on: [{name: first, status: FINISHED}]
"""


def admin_password(stack) -> str:
    return (stack.data_dir / "admin.password").read_text().strip()


def sign_in(browser, stack, username: str, password: str) -> None:
    browser.delete_all_cookies()
    browser.get(stack.url + "/ui/")
    browser.find_element(By.ID, "username").send_keys(username)
    browser.find_element(By.ID, "password").send_keys(password)
    button = browser.find_element(By.ID, "sign-in")
    button.click()
    wait(browser).until(replaced(button))  # the answer's page has replaced the form
    wait(browser).until(lambda b: b.execute_script("return document.readyState") == "complete")


def replaced(element):
    """Its page was replaced: the element is stale, or (chromedriver, asked mid-navigation) no longer belongs to the
    document; selenium's staleness_of takes the latter for an error (a CI run failed so, and the tests after it
    found no signed-in session)."""

    def gone(_browser) -> bool:
        try:
            element.is_enabled()
        except StaleElementReferenceException:
            return True
        except WebDriverException as error:
            if "does not belong to the document" not in str(error):
                raise
            return True
        return False

    return gone


def notice(browser) -> str:
    """The page's notice, read in one script: an element found while the form's answer replaces the page may belong
    to the old document by the time its text is asked for ('Node ... does not belong to the document')."""
    return browser.execute_script("const e = document.getElementById('notice'); return e ? e.innerText.trim() : ''")


def shown_status(browser) -> str:
    """Read in one script: the live page replaces the element as events arrive."""
    return browser.execute_script("const e = document.getElementById('workflow-status'); return e && e.dataset.status")


def wait(browser, seconds: float = 20):
    return WebDriverWait(browser, seconds, poll_frequency=0.1, ignored_exceptions=(StaleElementReferenceException,
                                                                                  NoSuchElementException))


def member(stack, org: str, username: str) -> httpx.Client:
    """A user of a new organization, with an API client holding their token."""
    org_id = stack.client.post("/v4/organizations", json={"name": org}).json()["id"]
    body = {"username": username, "email": f"{username}@example.org", "password": PASSWORD, "role": "user"}
    assert stack.client.post(f"/v4/organizations/{org_id}/users", json=body).status_code == 201
    token = httpx.post(stack.url + "/v4/auth/login", json={"username": username, "password": PASSWORD}).json()["token"]
    return httpx.Client(base_url=stack.url, headers=stack.auth(token), timeout=30)


def test_a_wrong_password_says_so_once_and_the_right_one_opens_the_dashboard(browser, stack):
    sign_in(browser, stack, "admin", "not-the-password")
    errors = browser.find_elements(By.CSS_SELECTOR, "[role=alert]")
    assert [e.text for e in errors] == ["Unknown username or wrong password."]
    sign_in(browser, stack, "admin", admin_password(stack))
    wait(browser).until(seen.presence_of_element_located((By.ID, "node-status")))
    assert "READY" in browser.find_element(By.ID, "node-status").text
    cookie = browser.get_cookie("roving_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert browser.execute_script("return document.cookie").find("roving_session") == -1


def test_a_submitted_workflow_reaches_finished_on_its_page_without_a_reload(browser, stack):
    sign_in(browser, stack, "admin", admin_password(stack))  # its own session: no test leans on another's
    workflow_id = stack.submit(SLEEPER, "ui-live")
    browser.get(f"{stack.url}/ui/workflows/{workflow_id}")
    first_seen = shown_status(browser)
    browser.execute_script("window.rovingSamePage = true")
    wait(browser, 40).until(lambda b: shown_status(b) == "FINISHED")
    assert first_seen != "FINISHED"
    assert browser.execute_script("return window.rovingSamePage") is True  # the page was never reloaded
    events = browser.find_element(By.ID, "events").text
    assert "Workflow.StageFinished" in events or "Finished" in events
    stages = browser.find_element(By.ID, "stages").text
    assert "first FINISHED" in stages  # the dependency is shown on the stage that waits for it
    graph = browser.execute_script("return document.querySelector('#stage-graph g[data-stage=\"second\"]')"
                                   ".getAttribute('class')")  # in one step: the live page redraws the graph
    assert "st-FINISHED" in graph  # the graph's boxes follow the live status too
    browser.get(stack.url + "/ui/workflows?status=FINISHED")
    assert "ui-live" in browser.find_element(By.ID, "workflows").text

    browser.get(f"{stack.url}/ui/workflows/{workflow_id}/logs/second")  # search marks matches in place
    wait(browser).until(lambda b: "beta two" in b.find_element(By.ID, "log").text)
    browser.find_element(By.ID, "log-search").send_keys("ALPHA")
    assert browser.find_element(By.ID, "log-count").text == "2 matches"
    assert [m.text for m in browser.find_elements(By.CSS_SELECTOR, "#log mark")] == ["alpha", "alpha"]
    browser.find_element(By.ID, "log-only").click()
    assert browser.find_element(By.ID, "log").text == "alpha one\nalpha three"


def test_an_admin_cordons_a_node_from_the_nodes_page_and_sees_the_hold(browser, stack):
    sign_in(browser, stack, "admin", admin_password(stack))
    browser.get(stack.url + "/ui/nodes")
    browser.find_element(By.ID, "cordon-reason-local-2").send_keys("bios update")
    browser.find_element(By.ID, "cordon-local-2").click()
    wait(browser).until(lambda b: notice(b) == "Cordoned local-2.")
    row = browser.find_element(By.ID, "node-local-2").find_element(By.XPATH, "./ancestor::tr").text
    assert "cordon" in row and "admin" in row and "bios update" in row
    holds = stack.client.get("/v4/nodes/local-2/holds").json()["holds"]
    assert [(h["effect"], h["source"], h["reason"]) for h in holds] == [("cordon", "admin", "bios update")]
    browser.find_element(By.ID, "uncordon-local-2").click()
    wait(browser).until(lambda b: notice(b) == "Uncordoned local-2.")
    assert stack.client.get("/v4/nodes/local-2/holds").json()["holds"] == []
    browser.find_element(By.ID, "node-local-2").click()  # the node's own page keeps the story
    wait(browser).until(seen.presence_of_element_located((By.ID, "node-events")))
    story = browser.find_element(By.ID, "node-events").text
    assert "cordon hold placed (admin): bios update" in story and "cordon hold released (admin)" in story


def test_a_form_post_without_its_csrf_token_is_refused(stack):
    with httpx.Client(base_url=stack.url) as people:
        signed = people.post("/ui/login", data={"username": "admin", "password": admin_password(stack)})
        assert signed.status_code == 303 and "roving_session" in people.cookies
        forged = people.post("/ui/nodes/local-1/cordon", data={"reason": "forged"})
        assert forged.status_code == 403 and "CSRF" in forged.text
        wrong = people.post("/ui/nodes/local-1/cordon", data={"reason": "forged", "csrf": "0" * 64})
        assert wrong.status_code == 403
    assert stack.client.get("/v4/nodes/local-1/holds").json()["holds"] == []


def test_a_tenant_cannot_reach_another_tenants_workflow_page(browser, stack):
    alice, bob = member(stack, "ui-org-a", "ui-alice"), member(stack, "ui-org-b", "ui-bob")
    with alice, bob:
        workflow_id = stack.submit(SLEEPER, "alices-secret", client=alice)
    sign_in(browser, stack, "ui-bob", PASSWORD)
    wait(browser).until(seen.presence_of_element_located((By.ID, "logout")))
    browser.get(f"{stack.url}/ui/workflows/{workflow_id}")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Not found"
    assert "alices-secret" not in browser.page_source
    browser.get(stack.url + "/ui/workflows")
    assert "alices-secret" not in browser.page_source
    browser.get(stack.url + "/ui/nodes")
    assert browser.find_elements(By.ID, "cordon-local-1") == []  # no admin actions for a tenant
    sign_in(browser, stack, "ui-alice", PASSWORD)
    browser.get(f"{stack.url}/ui/workflows/{workflow_id}")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Workflow alices-secret"

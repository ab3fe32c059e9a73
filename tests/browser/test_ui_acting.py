"""The UI acts and shows time, in a real browser against the README's stack: a Fuzzfile pasted and checked as it
is typed, submitted, its stages' start, end and duration shown in one time format; live events that survive a
dropped connection; a stop from the page; no Audit link for a user; charts and free resources."""

from __future__ import annotations

import re
import socket
import threading

import pytest

pytest.importorskip("selenium", reason="browser tests need selenium (the `test` extra)")

from selenium.webdriver.common.by import By  # noqa: E402 - after the skip
from selenium.webdriver.support import expected_conditions as seen  # noqa: E402

from tests.browser.test_ui_in_browser import PASSWORD, admin_password, member, shown_status, sign_in, wait  # noqa: E402

ONE_FORMAT = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")
DUPLICATE = """version: v4
jobs:
  hello:
    image: {uri: docker://alpine}
    command: [sleep, "1"]
    command: [echo, twice]
    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}
    policy: {timeout: {execute: 1m}}
"""
CHAIN = "version: v4\njobs:\n" + "".join(
    f"  s{i}:\n    image: {{uri: docker://alpine}}\n    command: [sleep, \"1\"]\n"
    f"    resource: {{cpu: {{cores: 1}}, memory: {{size: 32MiB}}}}\n"
    + (f"    depends-on: [{{name: s{i - 1}, status: FINISHED}}]\n" if i else "") for i in range(5))
FOREVER = ("version: v4\njobs:\n  long:\n    image: {uri: docker://alpine}\n    command: [sleep, \"300\"]\n"
           "    resource: {cpu: {cores: 1}, memory: {size: 32MiB}}\n")


def texts(browser, selector: str) -> list[str]:
    """The shown text of every element `selector` matches, read in one step: a live page re-renders its tables
    between two WebDriver calls, so reading element by element can meet one that is already replaced."""
    return browser.execute_script("return [...document.querySelectorAll(arguments[0])].map((e) => e.innerText)",
                                  selector)


def times_shown(browser) -> list[str]:
    return browser.execute_script("return [...document.querySelectorAll('time')].map((t) => t.textContent)")


def test_a_pasted_fuzzfile_is_checked_as_typed_submitted_and_its_stages_show_start_end_and_duration(browser, stack):
    sign_in(browser, stack, "admin", admin_password(stack))
    browser.get(stack.url + "/ui/submit")
    editor = browser.find_element(By.ID, "definition")
    editor.clear()
    editor.send_keys(DUPLICATE)
    wait(browser).until(lambda b: "duplicate key `command`" in b.find_element(By.ID, "problems").text)
    assert "not submittable" in browser.find_element(By.ID, "validity").text
    browser.execute_script("const e = document.getElementById('definition'); e.value = e.value.replace("
                           "'    command: [sleep, \"1\"]\\n', ''); e.dispatchEvent(new Event('input'))")
    wait(browser).until(lambda b: b.find_element(By.ID, "validity").text == "Valid.")
    browser.find_element(By.ID, "name").send_keys("pasted")
    browser.find_element(By.ID, "submit").click()
    wait(browser).until(seen.presence_of_element_located((By.ID, "workflow-id")))
    wait(browser, 40).until(lambda b: shown_status(b) == "FINISHED")
    wait(browser).until(lambda b: "s so far" not in b.find_element(By.ID, "stages").text)
    cells = texts(browser, "#stages tbody tr td")
    attempts, started, ended, took = cells[5:9]
    assert attempts == "1" and ONE_FORMAT.match(started) and ONE_FORMAT.match(ended)
    assert re.fullmatch(r"\d+\.\ds", took), took  # a second's job: tenths
    assert [t for t in times_shown(browser) if not ONE_FORMAT.match(t)] == []  # after live refreshes too
    browser.refresh()
    assert [t for t in times_shown(browser) if not ONE_FORMAT.match(t)] == []


class Cutter:
    """A loopback TCP relay in front of the stack whose open connections can be cut, as a flaky network would:
    the browser's EventSource sees its stream end and connects again (through the relay, which still listens)."""

    def __init__(self, port: int) -> None:
        self.upstream, self.open = port, []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream))
            self.open += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while chunk := source.recv(65536):
                sink.sendall(chunk)
        except OSError:
            pass
        for end in (source, sink):
            end.close()

    def cut(self) -> None:
        for connection in self.open:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            connection.close()
        self.open = []

    def close(self) -> None:
        self.server.close()
        self.cut()


def test_live_events_survive_a_dropped_connection_each_once(browser, stack):
    relay = Cutter(stack.port)
    try:
        browser.delete_all_cookies()
        browser.get(relay.url + "/ui/")
        browser.find_element(By.ID, "username").send_keys("admin")
        browser.find_element(By.ID, "password").send_keys(admin_password(stack))
        browser.find_element(By.ID, "sign-in").click()
        wait(browser).until(seen.presence_of_element_located((By.ID, "scope")))
        workflow_id = stack.submit(CHAIN, "ui-reconnect")
        browser.get(f"{relay.url}/ui/workflows/{workflow_id}")
        wait(browser, 30).until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "#events tbody tr")) >= 6)
        relay.cut()  # the live stream ends mid-run; EventSource reconnects with Last-Event-ID
        wait_finished(browser)
    finally:
        relay.close()
    shown = texts(browser, "#events tbody tr")
    assert len(shown) == len(stack.events(workflow_id)), "\n".join(shown)
    assert len(set(shown)) == len(shown)


def wait_finished(browser) -> None:
    wait(browser, 60).until(lambda b: shown_status(b) == "FINISHED"
                            and "(ended)" in b.find_element(By.ID, "live-state").text)


def test_a_running_workflow_is_stopped_from_its_page(browser, stack):
    sign_in(browser, stack, "admin", admin_password(stack))
    workflow_id = stack.submit(FOREVER, "ui-stop")
    stack.wait(lambda: stack.workflow(workflow_id)["status"] == "STARTED", 30, "the job to start")
    browser.get(f"{stack.url}/ui/workflows/{workflow_id}")
    browser.find_element(By.ID, "stop").click()
    browser.switch_to.alert.accept()
    wait(browser).until(lambda b: "Stop requested" in b.find_element(By.ID, "notice").text)
    stack.wait(lambda: stack.workflow(workflow_id)["status"] == "CANCELED", 30, "the workflow to be canceled")
    wait(browser, 30).until(lambda b: shown_status(b) == "CANCELED")


def test_a_user_sees_no_audit_link_and_a_dashboard_of_their_own_with_charts(browser, stack):
    with member(stack, "ui-acting", "ui-carol"):
        pass
    sign_in(browser, stack, "ui-carol", PASSWORD)
    wait(browser).until(seen.presence_of_element_located((By.ID, "scope")))
    assert "your work only (ui-carol)" in browser.find_element(By.ID, "scope").text
    assert browser.find_elements(By.CSS_SELECTOR, 'nav a[href="/ui/audit"]') == []
    assert browser.find_element(By.ID, "chart-queue").is_displayed()
    sign_in(browser, stack, "admin", admin_password(stack))
    assert browser.find_elements(By.CSS_SELECTOR, 'nav a[href="/ui/audit"]') != []
    browser.get(stack.url + "/ui/nodes")
    row = browser.find_element(By.ID, "node-local-1").find_element(By.XPATH, "./ancestor::tr").text
    assert re.search(r"\d+ of 2 used, \d+ free", row), row


def test_the_try_it_page_renders_every_operation_from_the_package_served_files(browser, stack):
    browser.get(stack.url + "/v4/docs")
    wait(browser, 30).until(lambda b: len(b.find_elements(By.CSS_SELECTOR, ".opblock")) > 50)
    assert "listWorkflows" in browser.find_element(By.ID, "swagger-ui").text
    assert browser.find_elements(By.CSS_SELECTOR, ".btn.authorize") != []  # paste a token, then "Try it out"
    hosts = browser.execute_script("return [...new Set(performance.getEntriesByType('resource')"
                                   ".map((r) => new URL(r.name).host))]")
    assert hosts == [stack.url.split("//")[1]]  # nothing from a CDN

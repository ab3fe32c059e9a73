"""`make screenshots`: a PNG of each UI page, taken in headless chromium against a fresh README stack.

    python -m tests.browser.screenshots docs/screenshots
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.browser.conftest import start_browser
from tests.e2e.stack import LocalStack

FINISHES = """
version: v4
jobs:
  prepare:
    image: {uri: docker://alpine}
    command: [sh, -c, "echo preparing; sleep 1; echo prepared"]
    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}
  train:
    image: {uri: docker://alpine}
    command: [sh, -c, "for i in 1 2 3; do echo epoch $i; done"]
    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}
    depends-on: [{name: prepare, status: FINISHED}]
  evaluate:
    image: {uri: docker://alpine}
    command: [sh, -c, "echo baseline 0.71"]
    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}
    depends-on: [{name: prepare, status: FINISHED}]
  report:
    image: {uri: docker://alpine}
    command: [sh, -c, "echo report written"]
    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}
    depends-on: [{name: train, status: FINISHED}, {name: evaluate, status: FINISHED}]
"""
RUNS = """
version: v4
jobs:
  sleeper:
    image: {uri: docker://alpine}
    command: [sleep, "600"]
    policy: {timeout: {execute: 15m}}
    resource: {cpu: {cores: 2}, memory: {size: 64MiB}}
"""
WAITS = """
version: v4
jobs:
  big:
    image: {uri: docker://alpine}
    command: ["true"]
    resource: {cpu: {cores: 2}, memory: {size: 64MiB}}
"""
WIDTH, MAX_HEIGHT = 1400, 2400


def shoot(browser, url: str, path: Path, search: str = "") -> None:
    """The whole page (up to MAX_HEIGHT), not just the first screen; `search` is typed into a log's search box."""
    metrics = {"width": WIDTH, "height": 900, "deviceScaleFactor": 1, "mobile": False}
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    browser.get(url)
    if search:
        browser.find_element("id", "log-search").send_keys(search)
    time.sleep(0.5)  # let the live page's script settle
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {**metrics, "height": min(height, MAX_HEIGHT)})
    browser.save_screenshot(str(path))
    print(f"wrote {path}")


def set_scene(stack: LocalStack) -> dict[str, str]:
    """A finished workflow (a diamond of four steps), one running, one waiting for room, a cordoned node and an
    endpoint."""
    done = stack.submit(FINISHES, "train-model")
    stack.wait_status(done, ("FINISHED",), 60)
    running = stack.submit(RUNS, "long-sleeper")
    stack.wait(lambda: stack.workflow(running)["stages"][0]["node"], 30, "the sleeper to start")
    busy = stack.workflow(running)["stages"][0]["node"]
    other = next(n["name"] for n in stack.ready_nodes() if n["name"] != busy)
    stack.client.post(f"/v4/nodes/{other}/cordon", json={"reason": "bios update"})
    waiting = stack.submit(WAITS, "needs-a-whole-node")
    stack.client.post("/v4/endpoints", json={"name": "notebook", "scope": "user"})
    time.sleep(2)  # a scheduler pass or two, so the waiting stage has its why
    return {"finished": done, "waiting": waiting, "held": other}


def main(argv: list[str]) -> int:
    out = Path(argv[0] if argv else "docs/screenshots")
    out.mkdir(parents=True, exist_ok=True)
    data, profile = Path(tempfile.mkdtemp(prefix="roving-shots-")), Path(tempfile.mkdtemp(prefix="roving-chromium-"))
    stack = LocalStack(data).start()
    try:
        browser = start_browser(profile)
    except pytest.skip.Exception as missing:
        stack.stop()
        print(f"screenshots: {missing}", file=sys.stderr)
        return 2
    try:
        ids = set_scene(stack)
        shoot(browser, stack.url + "/ui/", out / "login.png")
        browser.find_element("id", "username").send_keys("admin")
        browser.find_element("id", "password").send_keys((data / "admin.password").read_text().strip())
        browser.find_element("id", "sign-in").click()
        pages = {"dashboard": "/ui/", "workflows": "/ui/workflows", "workflow": f"/ui/workflows/{ids['finished']}",
                 "workflow-waiting": f"/ui/workflows/{ids['waiting']}",
                 "log": f"/ui/workflows/{ids['finished']}/logs/train", "queue": "/ui/queue", "nodes": "/ui/nodes",
                 "node": f"/ui/nodes/{ids['held']}",
                 "endpoints": "/ui/endpoints", "audit": "/ui/audit", "api": "/ui/api", "submit": "/ui/submit",
                 "try-it": "/v4/docs"}
        for name, path in pages.items():
            shoot(browser, stack.url + path, out / f"{name}.png", search="epoch 2" if name == "log" else "")
    finally:
        browser.quit()
        stack.stop()
        shutil.rmtree(profile, ignore_errors=True)
        shutil.rmtree(data, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""One URL across model replacements: persistent endpoints and the proxy on the real stack with local agents."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import httpx
import pytest

from adapters.nats_server import free_port


def served(version: str, root, annotations: str = "", script: str = "") -> str:
    """A workflow whose service serves `<root>/<version>/version` over HTTP behind endpoint `llm`."""
    port, where = free_port(), root / version
    script = script or (f"mkdir -p {where} && echo {version} > {where}/version && "
                        f"exec python3 -m http.server {port} --bind 127.0.0.1 --directory {where}")
    return f"""
version: v4
{annotations}
services:
  model:
    image: {{uri: docker://alpine:3.20}}
    script: {script}
    persist: true
    resource: {{cpu: {{cores: 1}}, memory: {{size: 64MiB}}}}
    readiness-probe: {{tcp-socket: {{port: {port}}}, period-seconds: 1}}
    network:
      ports: [{{name: http, port: {port}}}]
      endpoints: [{{name: llm, port-name: http, persistent: true}}]
"""


class Poller(threading.Thread):
    """A client asking the proxy URL over and over, remembering every answer that was not a 200."""

    def __init__(self, url: str, token: str) -> None:
        super().__init__(daemon=True)
        headers = {"FB-Authorization": f"Bearer {token}", "Authorization": f"Bearer {token}"}
        self.client = httpx.Client(headers=headers, timeout=10)
        self.url, self.stopping, self.seen, self.failures = url, threading.Event(), [], []

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                answer = self.client.get(self.url)
                ok = answer.status_code == 200
                (self.seen if ok else self.failures).append(answer.text.strip() if ok else answer.status_code)
            except httpx.HTTPError as error:
                self.failures.append(repr(error))
            time.sleep(0.02)

    def stop(self) -> None:
        self.stopping.set()
        self.join(10)
        self.client.close()


@pytest.fixture(scope="module")
def llm(stack):
    created = stack.client.post("/v4/endpoints", json={"name": "llm", "scope": "user"})
    assert created.status_code == 201, created.text
    return created.json()


def endpoint(stack) -> dict:
    return stack.client.get("/v4/endpoints/llm").json()


def serving(stack, workflow_id: str) -> None:
    stack.wait(lambda: endpoint(stack)["workflow_id"] == workflow_id, 30, f"endpoint llm to serve {workflow_id}")


def test_the_endpoint_url_serves_and_a_ready_takeover_fails_no_request(stack, llm, job_dir):
    url = stack.url + llm["path"] + "version"
    first = stack.submit(served("v1", job_dir), "v1")
    serving(stack, first)
    poller = Poller(url, stack.token("admin"))
    poller.start()
    try:
        second = stack.submit(served("v2", job_dir), "v2")
        serving(stack, second)
        stack.wait_status(first, ("CANCELED",), 20)
        time.sleep(1.5)  # the old service is being stopped now; keep asking
    finally:
        poller.stop()
    assert poller.failures == []
    assert poller.seen[0] == "v1" and poller.seen[-1] == "v2"


def test_start_cancels_the_serving_workflow_at_submission(stack, llm, job_dir):
    old = endpoint(stack)["workflow_id"]
    new = stack.submit(served("v3", job_dir, "annotations: {roving.endpoint-strategy: start}"), "v3")
    assert stack.workflow(old)["status"] == "CANCELED"
    serving(stack, new)
    assert httpx.get(stack.url + llm["path"] + "version", headers=stack.auth(stack.token("admin"))).text == "v3\n"


def test_a_takeover_whose_service_never_becomes_ready_keeps_the_old_binding(stack, llm, job_dir):
    old = endpoint(stack)["workflow_id"]
    stack.submit(served("broken", job_dir, script="sleep 1; exit 3"), "broken")
    stack.wait(lambda: endpoint(stack)["last_failure"], 30, "the takeover to fail")
    found = endpoint(stack)
    assert found["workflow_id"] == old and "never became ready" in found["last_failure"]
    assert httpx.get(stack.url + llm["path"] + "version", headers=stack.auth(stack.token("admin"))).status_code == 200


def test_the_cli_lists_the_endpoint_as_json(stack, llm):
    env = {"ROVING_API": stack.url, "ROVING_TOKEN": stack.token("admin"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", "import sys; from api.cli.main import main; sys.exit(main())",
                          "endpoint", "show", "llm", "-o", "json"], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert '"name": "llm"' in out.stdout or '"name":"llm"' in out.stdout

"""The autoscaler on the README stack: load through a pool's endpoint grows it from 1 to 2 replicas, and once the
load falls it shrinks back after its cooldown, the scaled-down replica stopped cleanly; every request is answered."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import httpx
import pytest

from tests.e2e.stack import LocalStack
from tests.e2e.test_service_replicas import two_free_ports

SERVER = """
import os, signal, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Slow(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path != "/healthz":
            time.sleep(0.4)
        body = f"replica {os.environ['FB_TASK_ID']}\\n".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", int(os.environ["FB_PORT_HTTP"])), Slow)
server.daemon_threads = False  # a stopped replica answers what it has begun
signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
server.serve_forever()
server.server_close()
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, job_dir):
    running = LocalStack(tmp_path_factory.mktemp("roving"),
                         settings={"ROVING_AUTOSCALE_INTERVAL": "1s", "ROVING_AGENT_WRITABLE": str(job_dir)}).start()
    yield running
    running.stop()


class Load:
    """`clients` callers asking through the endpoint back to back, keeping every status and answer."""

    def __init__(self, stack: LocalStack, path: str, clients: int) -> None:
        self.stack, self.path, self.stopping = stack, path, threading.Event()
        self.answers: list[tuple[int, str]] = []
        self.threads = [threading.Thread(target=self._call, daemon=True) for _ in range(clients)]
        for thread in self.threads:
            thread.start()

    def _call(self) -> None:
        with httpx.Client(base_url=self.stack.url, headers=self.stack.client.headers, timeout=30) as client:
            while not self.stopping.is_set():
                answer = client.get(self.path)
                self.answers.append((answer.status_code, answer.text.strip()))

    def stop(self) -> list[tuple[int, str]]:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=30)
        return self.answers


def scaled(stack: LocalStack, workflow_id: str) -> list[str]:
    return [e["message"] for e in stack.events(workflow_id) if e["type"] == "Workflow.ServiceScaled"]


def pool(stack: LocalStack, job_dir, name: str, least: int, cooldown: str) -> tuple[str, Callable[[], list], str]:
    """A persistent endpoint `name` and a service pool behind it (1 to 2 replicas of SERVER, or `least`), scaled on
    in-flight requests, its first replica in the endpoint: the workflow, its targets, the endpoint's path."""
    created = stack.client.post("/v4/endpoints", json={"name": name, "scope": "user"})
    assert created.status_code == 201, created.text
    port, server = two_free_ports(), job_dir / f"{name}_server.py"
    server.write_text(SERVER)
    definition = f"""
version: v4
services:
  web:
    image: {{uri: docker://alpine:3.20}}
    persist: true
    resource: {{cpu: {{cores: 1}}, memory: {{size: 64MiB}}}}
    readiness-probe: {{http-get: {{port: {port}, path: /healthz}}, period-seconds: 1}}
    network:
      ports: [{{name: http, port: {port}}}]
      endpoints: [{{name: {name}, port-name: http, persistent: true}}]
    autoscaler:
      min-replicas: {least}
      max-replicas: 2
      cooldown: {cooldown}
      metrics: [{{name: in-flight-requests, target: 1}}]
    script: exec python3 {server}
"""
    workflow_id = stack.submit(definition, name)
    targets = lambda: stack.client.get(f"/v4/endpoints/{name}").json()["targets"]  # noqa: E731
    stack.wait(lambda: len(targets()) == 1, 60, f"replica 1 in endpoint {name}")
    return workflow_id, targets, created.json()["path"]


def test_load_grows_a_pool_from_one_to_two_and_it_shrinks_back_after_its_cooldown(stack, job_dir):
    workflow_id, targets, path = pool(stack, job_dir, "scaled", least=1, cooldown="4s")

    busy = Load(stack, path, clients=4)
    stack.wait(lambda: len(targets()) == 2, 60, "the pool to grow to 2 replicas")
    time.sleep(2)  # both replicas answer
    answers = busy.stop()
    assert scaled(stack, workflow_id)[0].startswith("Scaled from 1 to 2 replicas: in-flight-requests")

    steady = Load(stack, path, clients=1)  # about one request in flight: one replica is enough
    stack.wait(lambda: len(targets()) == 1, 60, "the pool to shrink back to 1 replica")
    time.sleep(2)
    answers += steady.stop()

    assert {code for code, _ in answers} == {200}, sorted({text for code, text in answers if code != 200})
    assert {text for _, text in answers} == {"replica 1", "replica 2"}
    messages = scaled(stack, workflow_id)
    assert len(messages) == 2 and messages[1].startswith("Scaled from 2 to 1 replicas") and "stopped web[2]" in messages[1]
    stages = {s["name"]: s for s in stack.workflow(workflow_id)["stages"]}
    assert stages["web[1]"]["status"] == "RUNNING"
    assert stages["web[2]"]["status"] == "PENDING" and stages["web[2]"]["reason"].startswith("Scaled down:")
    assert stack.client.post(f"/v4/workflows/{workflow_id}:stop").status_code == 200


def test_an_idle_pool_scales_to_zero_and_the_first_request_wakes_it_and_is_answered(stack, job_dir):
    workflow_id, targets, path = pool(stack, job_dir, "sleepy", least=0, cooldown="3s")
    stack.wait(lambda: any(m.startswith("Scaled from 1 to 0") for m in scaled(stack, workflow_id)), 60,
               "the idle pool to scale to zero")
    stack.wait(lambda: targets() == [], 30, "the endpoint to have no replica")
    started = time.monotonic()
    answer = stack.client.get(path, timeout=90)
    assert answer.status_code == 200 and answer.text.strip() == "replica 1", answer.text
    woke_in = time.monotonic() - started
    assert any(m == "Scaled from 0 to 1 replicas: woken by a request through endpoint sleepy"
               for m in scaled(stack, workflow_id))
    print(f"woken and answered in {woke_in:.1f}s")
    assert stack.client.post(f"/v4/workflows/{workflow_id}:stop").status_code == 200

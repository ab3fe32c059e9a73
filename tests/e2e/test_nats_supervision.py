"""`roving up` keeps its nats-server: a killed server comes back, a dead log answers 503 fast, a stop stays prompt,
and a killed `roving up` leaves no server behind to be doubled by the next start."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import httpx

from adapters.nats_owner import servers_of
from adapters.nats_server import find_binary
from tests.e2e.stack import LocalStack

HELLO = (Path(__file__).resolve().parents[2] / "examples" / "hello.yaml").read_text()


def data_dir(tmp_path: Path) -> Path:
    (tmp_path / "data").mkdir()
    return tmp_path / "data"


def servers_on(data_dir: Path) -> list[int]:
    """Every nats-server whose command line names this data dir's store (found in /proc)."""
    nats = data_dir / "nats"
    return servers_of((nats / "roving.conf").resolve(), nats / "roving.pid")


def server_pid(stack: LocalStack) -> int:
    serving = servers_on(stack.data_dir)
    assert len(serving) == 1, f"nats-servers on one store: {serving}"
    return serving[0]


def breakable_server(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """A nats-server that refuses to start while the returned flag file exists: a restart that keeps failing."""
    broken = tmp_path / "broken"
    wrapper = tmp_path / "nats-server"
    wrapper.write_text(f'#!/bin/sh\n[ -e "{broken}" ] && {{ echo "broken for the test" >&2; exit 1; }}\n'
                       f'exec "{find_binary()}" "$@"\n')
    wrapper.chmod(0o755)
    return {"ROVING_NATS_SERVER": str(wrapper)}, broken


def restarts_counted(stack: LocalStack) -> float:
    for line in stack.client.get("/metrics").text.splitlines():
        if line.startswith("roving_nats_restarts_total "):
            return float(line.split()[1])
    return 0.0


def test_a_nats_server_killed_under_roving_up_is_restarted_and_a_submit_afterwards_succeeds(tmp_path):
    stack = LocalStack(data_dir(tmp_path), nodes=1).start()
    try:
        first = server_pid(stack)
        os.kill(first, signal.SIGKILL)
        stack.wait(lambda: servers_on(stack.data_dir) not in ([], [first]) and stack._ready(), 15,
                   "the nats-server to be restarted")
        assert server_pid(stack) != first
        workflow = stack.submit(HELLO, "after-the-restart")
        assert stack.client.get(f"/v4/workflows/{workflow}").status_code == 200  # the views follow the log again
        assert stack.wait_status(workflow, ("FINISHED", "FAILED"))["status"] == "FINISHED"
        assert restarts_counted(stack) == 1
    finally:
        stack.stop()


def test_while_the_log_is_down_readyz_and_submits_answer_503_quickly_and_it_comes_back(tmp_path):
    env, broken = breakable_server(tmp_path)
    stack = LocalStack(data_dir(tmp_path), nodes=1, settings=env).start()
    try:
        broken.touch()
        os.kill(server_pid(stack), signal.SIGKILL)
        stack.wait(lambda: httpx.get(stack.url + "/readyz", timeout=5).status_code == 503, 10, "/readyz to say 503")
        assert "log" in httpx.get(stack.url + "/readyz", timeout=5).json()["reason"]
        started = time.monotonic()
        answer = stack.client.post("/v4/workflows", json={"name": "while-down", "definition": HELLO})
        took = time.monotonic() - started
        assert answer.status_code == 503 and answer.headers["Retry-After"], answer.text
        assert answer.json()["code"] == "log_unavailable"
        assert took < 10, f"the submit took {took:.1f}s to be refused"
        broken.unlink()
        stack.wait(stack._ready, 20, "the nats-server to come back")
        assert stack.client.post("/v4/workflows", json={"name": "back", "definition": HELLO}).status_code == 201
    finally:
        stack.stop()


def test_sigterm_stops_roving_up_promptly_while_its_nats_server_is_dead(tmp_path):
    env, broken = breakable_server(tmp_path)
    stack = LocalStack(data_dir(tmp_path), nodes=1, settings=env).start()
    try:
        broken.touch()
        os.kill(server_pid(stack), signal.SIGKILL)
        stack.wait(lambda: not stack._ready(), 10, "the stack to notice")
        started = time.monotonic()
        stack.process.send_signal(signal.SIGTERM)
        stack.process.wait(30)
        assert time.monotonic() - started < 15
        assert stack.process.returncode == 0
    finally:
        stack.stop()


def test_a_killed_roving_up_leaves_no_nats_server_to_be_doubled_by_the_next_start(tmp_path):
    first = LocalStack(tmp_path, nodes=1).start()
    try:
        before = first.submit(HELLO, "before")
        shown = first.wait_status(before, ("FINISHED", "FAILED"))["status"]
    finally:
        os.kill(first.process.pid, signal.SIGKILL)  # the control plane alone, as the OOM killer would
        first.process.wait()
        first.stop()
    second = LocalStack(tmp_path, nodes=1).start()
    try:
        assert len(servers_on(tmp_path)) == 1, "a second nats-server was started on the same store"
        assert second.workflow(before)["status"] == shown
    finally:
        second.stop()

"""Writes never hang on the log: with the log frozen, a submit answers 503 with Retry-After and the cause within
ROVING_LOG_WRITE_TIMEOUT (and the probe's few seconds), and the CLI waits it out, says so, and submits once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import httpx

from tests.e2e.stack import LocalStack
from tests.e2e.test_cli import CLI, EXAMPLES
from tests.e2e.test_nats_supervision import HELLO, server_pid

BOUND = 3.0


def test_a_submit_to_a_frozen_log_answers_503_with_the_cause_and_the_cli_waits_it_out(tmp_path):
    stack = LocalStack(tmp_path, nodes=0, settings={"ROVING_LOG_WRITE_TIMEOUT": str(BOUND)}).start()
    pid = server_pid(stack)
    try:
        os.kill(pid, signal.SIGSTOP)
        began = time.monotonic()
        answer = httpx.post(stack.url + "/v4/workflows", json={"name": "frozen", "definition": HELLO},
                            headers={**stack.auth(stack.token("admin")), "Idempotency-Key": "frozen-1"}, timeout=90)
        took = time.monotonic() - began
        assert answer.status_code == 503 and answer.json()["code"] == "log_unavailable", answer.text
        assert answer.headers["Retry-After"] and "frozen" in answer.json()["error"], answer.text
        assert took < BOUND + 3, f"answered after {took:.1f}s"  # the bound, and the probe's deadline to notice
        print(f"frozen log: 503 after {took:.1f}s ({answer.json()['error']})")

        thaw = threading.Timer(8.0, os.kill, (pid, signal.SIGCONT))  # while the CLI waits
        thaw.start()
        env = {**os.environ, "ROVING_API": stack.url, "ROVING_TOKEN": stack.token("admin"), "HOME": str(tmp_path)}
        done = subprocess.run([sys.executable, "-c", CLI, "workflow", "start", str(EXAMPLES / "hello.yaml"),
                               "--name", "waited"], env=env, capture_output=True, text=True, timeout=120)
        thaw.join()
        assert done.returncode == 0, done.stderr
        assert "waiting" in done.stderr and "trying again" in done.stderr, done.stderr
        named = [w for w in stack.client.get("/v4/workflows").json()["workflows"] if w["name"] == "waited"]
        assert len(named) == 1, named
    finally:
        os.kill(pid, signal.SIGCONT)
        stack.stop()

"""`roving up`'s log: only its own users get in, agents' job logs still arrive, and a secret in a Fuzzfile
never lies in clear text in the store files on disk."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import httpx
import pytest

from adapters.nats_auth import credentials_in, read_credentials
from adapters.nats_tls import with_tls
from tests.e2e.stack import LocalStack
from tests.nats_connect import connect_refusal

SECRET = "hunter2-" + "e2e"  # split so this file's own text is not what the grep finds
FUZZFILE = f"""
version: v4
jobs:
  migrate:
    image: {{uri: docker://alpine:3.20}}
    env: [DB_PASSWORD={SECRET}]
    script: echo migrated
"""


def nats_address(data_dir: Path) -> str:
    """The embedded server's client URL with no user, trusting its CA when it speaks TLS."""
    port = re.search(r'listen: "127\.0\.0\.1:(\d+)"', (data_dir / "nats" / "roving.conf").read_text()).group(1)
    ca = data_dir / "nats" / "tls" / "ca.pem"
    return with_tls(f"nats://127.0.0.1:{port}", ca) if ca.exists() else f"nats://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def stopped_stack(tmp_path_factory: pytest.TempPathFactory):
    """A stack that ran one workflow with a secret in its env, then stopped (its store is flushed)."""
    stack = LocalStack(tmp_path_factory.mktemp("roving"), nodes=1).start()
    try:
        address = nats_address(stack.data_dir)
        control = read_credentials(stack.data_dir / "nats" / "credentials" / "control.creds").url(address)
        answers = asyncio.run(connect_refusal(address)), asyncio.run(connect_refusal(control))
        handed = httpx.get(stack.url + "/v4/agent/config", headers=stack.auth(stack.token("agent")), timeout=10).json()
        workflow_id = stack.submit(FUZZFILE, "migrate")
        done = stack.wait_status(workflow_id, ("FINISHED", "FAILED"))
        log = ""
        for _ in range(50):  # the agent flushes output every 0.2 s: it may land just after the status
            log = stack.client.get(f"/v4/workflows/{workflow_id}/log/migrate").text
            if log:
                break
            time.sleep(0.2)
    finally:
        stack.stop()
    stack.handed = handed  # what GET /v4/agent/config gave an agent token
    return stack, answers, done, log


def test_the_log_of_roving_up_refuses_an_anonymous_client_and_admits_the_control_plane(stopped_stack) -> None:
    _, (anonymous, control), _, _ = stopped_stack
    assert "Authorization Violation" in anonymous
    assert control == "connected"


def test_an_agent_is_handed_the_agent_role_never_the_control_planes_credentials(stopped_stack) -> None:
    stack = stopped_stack[0]
    creds = stack.data_dir / "nats" / "credentials"
    given = credentials_in(stack.handed["nats_url"])
    assert given is not None and given.user == read_credentials(creds / "agent.creds").user
    assert read_credentials(creds / "control.creds").password not in stack.handed["nats_url"]


def test_a_job_runs_and_its_output_reaches_the_log_through_the_authenticated_server(stopped_stack) -> None:
    _, _, done, log = stopped_stack
    assert done["status"] == "FINISHED"
    assert "migrated" in log


def test_a_fuzzfile_secret_does_not_appear_in_the_store_files(stopped_stack) -> None:
    stack = stopped_stack[0]
    store = stack.data_dir / "nats" / "jetstream"
    files = [p for p in store.rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) > 0
    assert [p for p in files if SECRET.encode() in p.read_bytes()] == []

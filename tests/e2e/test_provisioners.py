"""Elastic capacity on the README's stack with no local nodes at all: provisioners make the nodes work needs and
remove them once idle (the issue's contract), and a failing command provider is retried and reported."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from adapters.nats_server import free_port
from tests.e2e.stack import LocalStack

REPO = Path(__file__).resolve().parents[2]
CONTRACT = {"provider": "local", "template": {"cpu": 4, "memory": "4GiB"}, "maxNodes": 2, "idleSeconds": 20}
ONE_JOB = """
version: v4
jobs:
  hello:
    image: {uri: docker://alpine:3.20}
    command: [sh, -c, "echo hello from a provisioned node"]
    resource: {cpu: {cores: 1}, memory: {size: 256MiB}}
"""
SCRIPTED_JOB = """
version: v4
jobs:
  cloud:
    image: {uri: docker://alpine:3.20}
    command: [sh, -c, "echo on a scripted node"]
    resource: {cpu: {cores: 2}, memory: {size: 256MiB}, annotations: {pool: scripted}}
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory):
    running = LocalStack(tmp_path_factory.mktemp("roving"), nodes=0).start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def scripted():
    """The command provider's program (ops.soak.scripted_nodes) whose first create of each request fails."""
    with scripted_nodes() as (program, state):
        (state / "fail-first").touch()
        yield program


@contextlib.contextmanager
def scripted_nodes():
    """The program behind a wrapper, with its state directory; the agents it starts outlive the stack by design (a
    cloud's machines), so they are stopped here at the end."""
    state = Path(tempfile.mkdtemp(prefix="roving-scripted-"))  # jobs run as nobody: not under pytest's 0700 tmp
    state.chmod(0o755)
    program = state / "nodes.sh"
    program.write_text(f"#!/bin/sh\ncd {REPO}\nexec {sys.executable} -m ops.soak.scripted_nodes {state}\n")
    program.chmod(0o755)
    try:
        yield program, state
    finally:
        for pid_file in state.glob("*.pid"):
            subprocess.run(["kill", "-9", pid_file.read_text().strip()], capture_output=True)
        shutil.rmtree(state, ignore_errors=True)


def node_names(stack: LocalStack) -> set[str]:
    return {n["name"] for n in stack.client.get("/v4/nodes").json()["nodes"]}


def made_by(stack: LocalStack, provisioner: str) -> list[dict]:
    found = stack.client.get(f"/v4/provisioners/{provisioner}").json()
    return found["nodes"] + found["history"]


def deleted(stack: LocalStack, provisioner: str, node: str) -> bool:
    return any(n["node"] == node and n["state"] == "DELETED" for n in made_by(stack, provisioner))


def stage_node(stack: LocalStack, workflow_id: str) -> str:
    started = [e for e in stack.events(workflow_id) if e["type"] == "Workflow.StageStarted"]
    assert started, stack.events(workflow_id)
    return started[-1]["message"].removeprefix("Started on ").strip()


def test_a_one_job_workflow_finishes_on_a_node_the_provisioner_made_which_is_gone_once_idle(stack):
    assert stack.ready_nodes() == []
    created = stack.client.put("/v4/provisioners/elastic", json=CONTRACT)
    assert created.status_code == 201, created.text
    assert [p["name"] for p in stack.client.get("/v4/provisioners").json()["provisioners"]] == ["elastic"]
    workflow = stack.submit(ONE_JOB, "elastic-hello")
    assert stack.wait_status(workflow, ("FINISHED", "FAILED"), timeout=90)["status"] == "FINISHED"
    ended = time.monotonic()
    node = stage_node(stack, workflow)
    assert node in {n["node"] for n in made_by(stack, "elastic")}
    assert "hello from a provisioned node" in stack.stage_log(workflow, "hello", "hello from")
    stack.wait(lambda: node not in node_names(stack), CONTRACT["idleSeconds"] + 30, f"{node} to be removed")
    assert time.monotonic() - ended <= CONTRACT["idleSeconds"] + 30
    stack.wait(lambda: deleted(stack, "elastic", node), 15, f"the provider to delete {node}")
    [done] = [n for n in made_by(stack, "elastic") if n["node"] == node]
    assert done["reason"].startswith("idle for"), done
    assert subprocess.run(["pgrep", "-f", "--", f"--node {node} "], capture_output=True).returncode == 1


def test_a_failed_create_is_reported_retried_and_the_node_it_then_made_runs_the_job(stack, scripted):
    body = {"provider": "command", "template": {"cpu": 2, "memory": "1GiB", "annotations": {"pool": "scripted"}},
            "maxNodes": 1, "idleSeconds": 5, "bootTimeoutSeconds": 60,
            "settings": {"create": str(scripted), "delete": str(scripted)}}
    assert stack.client.put("/v4/provisioners/scripted", json=body).status_code == 201
    workflow = stack.submit(SCRIPTED_JOB, "scripted-job")
    seen: list[dict] = []

    def failed_attempt_reported() -> bool:
        seen[:] = stack.client.get(f"/v4/workflows/{workflow}/why").json()["stages"]
        facts = seen[0]["facts"] if seen else {}
        return seen != [] and seen[0]["reason"] == "WAITING_FOR_PROVISION" and facts.get("state") == "FAILED"
    stack.wait(failed_attempt_reported, 30, "why to report the failed create")
    assert "no capacity" in seen[0]["facts"]["last_error"] and seen[0]["facts"]["attempts"] == 1
    assert stack.wait_status(workflow, ("FINISHED", "FAILED"), timeout=90)["status"] == "FINISHED"
    node = stage_node(stack, workflow)
    [made] = [n for n in made_by(stack, "scripted") if n["node"] == node]
    assert made["attempts"] == 2
    metrics = stack.client.get("/metrics").text
    assert 'roving_provisioner_failures_total{kind="create",provisioner="scripted"} 1.0' in metrics
    stack.wait(lambda: node not in node_names(stack), 5 + 30, f"{node} to be removed")
    stack.wait(lambda: deleted(stack, "scripted", node), 15, f"the delete program to delete {node}")


def test_a_control_plane_killed_while_a_node_is_made_neither_loses_it_nor_makes_it_twice(tmp_path):
    """roving up is killed -9 while a slow create runs (its program outlives it, as a cloud's call would); the
    next control plane asks again under the same request id, and the program's answer is the machine it made."""
    port = free_port()
    first = second = None
    with scripted_nodes() as (program, state):
        (state / "delay-create").write_text("6")
        try:
            first = LocalStack(tmp_path, nodes=0, port=port).start()
            body = {"provider": "command", "template": {"cpu": 2, "memory": "1GiB"}, "maxNodes": 2, "idleSeconds": 600,
                    "settings": {"create": str(program), "delete": str(program)}}
            assert first.client.put("/v4/provisioners/slow", json=body).status_code == 201
            workflow = first.submit(ONE_JOB, "made-once")
            first.wait(lambda: [n["state"] for n in made_by(first, "slow")] == ["CREATING"], 30, "the create to start")
            first.process.kill()
            first.process.wait()
            second = LocalStack(tmp_path, nodes=0, port=port).start()
            assert second.wait_status(workflow, ("FINISHED", "FAILED"), timeout=120)["status"] == "FINISHED"
            # the machine is marked UP when the provisioner's next pass sees its node joined: a job may end first
            second.wait(lambda: [n["state"] for n in made_by(second, "slow")] == ["UP"], 30, "the node to be UP")
            [made] = made_by(second, "slow")
            assert (made["node"], made["state"], made["attempts"]) == ("slow-1", "UP", 2)
            assert stage_node(second, workflow) == "slow-1" and node_names(second) == {"slow-1"}
            launches = (state / "launches.log").read_text().splitlines()
            assert [line.split()[0] for line in launches] == ["slow-1"], launches
        finally:
            for stack in (second, first):
                if stack is not None:
                    stack.stop()

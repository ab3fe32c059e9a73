"""Real agent processes die mid-job: work with `retry.on: node` moves, other work fails clearly, stale agents are fenced."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import httpx
import pytest

from tests.e2e.stack import LocalStack

AGENT = "import sys; from api.agent.main import agent_main; sys.exit(agent_main(sys.argv[1:]))"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory):
    # a killed agent stands for a lost machine here: roving up must not start it again
    running = LocalStack(tmp_path_factory.mktemp("roving-loss"), nodes=3, lease_seconds=2.0,
                         settings={"ROVING_LOCAL_AGENT_RESTART": "false"}).start()
    yield running
    running.stop()


def started_node(stack, workflow_id: str) -> str:
    stack.wait(lambda: stack.workflow(workflow_id)["stages"][0]["status"] == "STARTED", 30, "the job to start")
    return stack.workflow(workflow_id)["stages"][0]["node"]


def test_a_lost_node_moves_work_that_retries_on_node_and_fences_the_old_agent(stack, tmp_path, job_dir):
    # the attempt from its own directory (<stage>-<attempt>): a job writes no marker another node's job could read
    definition = """
version: v4
jobs:
  resilient:
    image: {uri: docker://alpine:3.20}
    script: |
      case "$PWD" in *-1) sleep 30;; esac
      echo second attempt
    policy:
      retry: {on: [node], attempts: 2}
"""
    workflow_id = stack.submit(definition, "resilient")
    lost = started_node(stack, workflow_id)
    old = stack.workflow(workflow_id)["stages"][0]
    os.kill(stack.agent_pid(lost), signal.SIGKILL)
    done = stack.wait_status(workflow_id, ("FINISHED", "FAILED"), timeout=45)
    stage = done["stages"][0]
    assert (done["status"], stage["attempts"]) == ("FINISHED", 2)
    assert stage["node"] != lost
    assert any(n["name"] == lost and n["status"] == "OFFLINE" for n in stack.client.get("/v4/nodes").json()["nodes"])

    agent_log = (tmp_path / "rejoined-agent.log").open("wb")  # kept for a failure's post-mortem
    agent = subprocess.Popen([sys.executable, "-c", AGENT, "--node", lost, "--api", stack.url, "--token-file",
                              str(stack.data_dir / "agent.token"), "--cpus", "2", "--memory", "2GiB",
                              "--workdir", str(job_dir / "rejoined")], stdout=agent_log, stderr=subprocess.STDOUT)
    try:
        stack.wait(lambda: any(n["name"] == lost and n["status"] == "READY" for n in stack.ready_nodes()), 30,
                   "the node to rejoin")
        node_id = next(n["id"] for n in stack.ready_nodes() if n["name"] == lost)
        with httpx.Client(base_url=stack.url, headers=stack.auth(stack.token("agent"))) as as_agent:
            stale = as_agent.post("/v4/agent/reports", json={
                "node_id": node_id, "allocation_id": old["allocation_id"], "epoch": 1, "event": "exited",
                "exit_code": 0, "reason": "late report from the old process", "ports": []})
        assert stale.status_code == 409
    finally:
        agent.send_signal(signal.SIGTERM)
        agent.wait(15)
        agent_log.close()
    stack.wait(lambda: all(n["name"] != lost for n in stack.ready_nodes()), 30, "the stopped agent's lease to lapse")


def test_a_lost_node_fails_work_without_node_retry_and_names_the_field_to_set(stack):
    definition = """
version: v4
jobs:
  fragile:
    image: {uri: docker://alpine:3.20}
    command: [sleep, "30"]
"""
    workflow_id = stack.submit(definition, "fragile")
    lost = started_node(stack, workflow_id)
    os.kill(stack.agent_pid(lost), signal.SIGKILL)
    done = stack.wait_status(workflow_id, ("FINISHED", "FAILED"), timeout=45)
    assert done["status"] == "FAILED"
    assert "node" in done["stages"][0]["reason"] and "retry" in done["stages"][0]["reason"]

"""The loop from placement to completion under ordinary concurrency, on the README's stack with real agents.

Each layout here lost completions or answered 409 before commands ran in a unit of work: many one-job
workflows at once, a task array, a job and a service sharing a node, stop and evict of two stages on one node.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx

ONE_JOB = """
version: v4
jobs:
  j:
    image: {uri: docker://alpine}
    command: ["true"]
    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}
"""

ARRAY = """
version: v4
jobs:
  tasks:
    image: {uri: docker://alpine}
    command: ["true"]
    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}
    task-array: {start: 1, end: 200, concurrency: 8}
"""

JOB_AND_SERVICE = """
version: v4
jobs:
  client:
    image: {uri: docker://alpine}
    command: [sleep, "0.2"]
    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}
    depends-on: [{name: server, status: RUNNING}]
services:
  server:
    image: {uri: docker://alpine}
    command: [sleep, "60"]
    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}
"""

TWO_SLEEPERS = """
version: v4
jobs:
  a:
    image: {uri: docker://alpine}
    command: [sleep, "60"]
    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}
  b:
    image: {uri: docker://alpine}
    command: [sleep, "60"]
    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}
"""

WHOLE_NODE = """
version: v4
jobs:
  big:
    image: {uri: docker://alpine}
    command: ["true"]
    resource: {cpu: {cores: 2}, memory: {size: 64MiB}}
"""

ENDED = ("FINISHED", "FAILED", "CANCELED")


def submit_many(stack, count: int, threads: int) -> list[str]:
    def one(_: int) -> str:
        with httpx.Client(base_url=stack.url, headers=stack.auth(stack.token("admin")), timeout=60) as client:
            return stack.submit(ONE_JOB, "burst", client=client)

    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(one, range(count)))


def test_two_hundred_concurrent_one_job_workflows_all_finish(stack):
    ids = submit_many(stack, 200, threads=4)
    stack.wait(lambda: all(stack.workflow(w)["status"] in ENDED for w in ids), 180, "200 one-job workflows to end")
    statuses = {w: stack.workflow(w)["status"] for w in ids}
    assert sorted(set(statuses.values())) == ["FINISHED"], [stack.workflow(w) for w, s in statuses.items()
                                                             if s != "FINISHED"][:2]


def test_a_two_hundred_task_array_runs_every_task_once(stack):
    workflow_id = stack.submit(ARRAY, "array")
    done = stack.wait_status(workflow_id, ENDED, timeout=180)
    assert done["status"] == "FINISHED", [s for s in done["stages"] if s["status"] != "FINISHED"][:3]
    assert len(done["stages"]) == 200 and {s["exit_code"] for s in done["stages"]} == {0}


def test_a_job_and_a_service_that_share_a_node_end_the_workflow(stack):
    stack.client.post("/v4/nodes/local-2/cordon", json={"reason": "keep both stages on local-1"})
    try:
        done = stack.wait_status(stack.submit(JOB_AND_SERVICE, "pair"), ENDED, timeout=60)
    finally:
        stack.client.post("/v4/nodes/local-2/uncordon")
    assert done["status"] == "FINISHED"
    assert {s["node"] for s in done["stages"]} == {"local-1"}


def test_stopping_two_stages_on_one_node_succeeds_and_frees_the_node(stack):
    stack.client.post("/v4/nodes/local-2/cordon", json={"reason": "keep both stages on local-1"})
    try:
        workflow_id = stack.submit(TWO_SLEEPERS, "sleepers")
        stack.wait(lambda: {s["status"] for s in stack.workflow(workflow_id)["stages"]} == {"STARTED"}, 30,
                   "both stages to start")
        answer = stack.client.post(f"/v4/workflows/{workflow_id}:stop")
        assert answer.status_code < 300, answer.text
        assert stack.wait_status(workflow_id, ENDED)["status"] == "CANCELED"
        big = stack.submit(WHOLE_NODE, "whole-node")
        assert stack.wait_status(big, ENDED, timeout=30)["status"] == "FINISHED"
    finally:
        stack.client.post("/v4/nodes/local-2/uncordon")


def test_evicting_a_node_with_two_stages_gives_its_capacity_back(stack):
    stack.client.post("/v4/nodes/local-2/cordon", json={"reason": "keep both stages on local-1"})
    try:
        workflow_id = stack.submit(TWO_SLEEPERS, "evicted")
        stack.wait(lambda: {s["status"] for s in stack.workflow(workflow_id)["stages"]} == {"STARTED"}, 30,
                   "both stages to start")
        answer = stack.client.post("/v4/nodes/local-1/evict", json={"reason": "fan failure"})
        assert answer.status_code < 300, answer.text
        assert stack.wait_status(workflow_id, ENDED)["status"] == "FAILED"
        release = stack.client.post("/v4/nodes/local-1/uncordon")
        assert release.status_code < 300, release.text
        for hold in stack.client.get("/v4/nodes/local-1").json().get("holds", []):
            stack.client.delete(f"/v4/nodes/local-1/holds/{hold['id']}")
        big = stack.submit(WHOLE_NODE, "after-evict")
        assert stack.wait_status(big, ENDED, timeout=30)["status"] == "FINISHED"
    finally:
        stack.client.post("/v4/nodes/local-2/uncordon")

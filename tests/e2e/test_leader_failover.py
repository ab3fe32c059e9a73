"""The scheduler (and the audit feed and provisioners that follow its lease) fails over between control-plane
processes: kill -9 of the API worker that leads it, and another leads within the lease's TTL and a quarter (the
standby asks at that pace) plus a pass; work submitted meanwhile is placed and FINISHES."""

from __future__ import annotations

import os
import signal
import time

import httpx

from tests.e2e.stack import LocalStack

LEASE = 3.0
BOUND = LEASE * 1.25 + 3.0  # the lease lapses, the standby asks, a pass runs (slack for a loaded machine)
JOB = """
version: v4
jobs:
  after:
    image: {uri: docker://alpine:3.20}
    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}
    script: echo placed by the next leader
"""


def leader(stack: LocalStack, other_than: int | None = None, tries: int = 200) -> int | None:
    for _ in range(tries):
        try:
            process = httpx.get(stack.url + "/readyz", timeout=2).json().get("process", {})
        except (httpx.HTTPError, ValueError):
            process = {}
        if process.get("leads_scheduler") and process.get("pid") != other_than:
            return int(process["pid"])
        time.sleep(0.05)
    return None


def test_killing_the_leading_worker_hands_the_scheduler_to_another_within_the_lease(tmp_path):
    stack = LocalStack(tmp_path, nodes=1, lease_seconds=LEASE, settings={"ROVING_API_WORKERS": "2"}).start()
    try:
        first = leader(stack)
        assert first is not None, "no worker says it leads the scheduler"
        os.kill(first, signal.SIGKILL)
        began = time.monotonic()
        # the killed worker's kept-alive connections are reset: a client reconnects (the CLI retries), so does this one
        headers = stack.client.headers
        stack.client.close()
        stack.client = httpx.Client(base_url=stack.url, headers=headers, timeout=30)
        workflow = stack.submit(JOB, "after-the-leader")  # the other worker takes it; nobody places it yet
        second = leader(stack, other_than=first, tries=int(BOUND * 40))
        took = time.monotonic() - began
        print(f"the scheduler led again {took:.1f}s after its leader's kill -9 (lease {LEASE:g}s)")
        assert second is not None and took <= BOUND, f"no new leader within {BOUND:.1f}s"
        assert stack.wait_status(workflow, ("FINISHED", "FAILED"), timeout=60)["status"] == "FINISHED"
    finally:
        stack.stop()

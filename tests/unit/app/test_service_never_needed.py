"""A service that is still queued when the workflow's last job ends is withdrawn: its allocation canceled, the stage
ended, the workflow over. (The soak found one placed after its job had finished, running alone for good.)"""

from __future__ import annotations

from uuid import uuid4

from domain.allocation import Allocation
from domain.app.ids import allocation_id
from domain.workflow import Workflow
from tests.unit.app.builders import T0, app, later, user

JOB_BESIDE_A_SERVICE = """
version: v4
services:
  cache:
    image: {uri: docker://alpine}
    script: serve
jobs:
  work:
    image: {uri: docker://alpine}
    script: compute
"""


def test_a_queued_service_is_withdrawn_when_the_last_job_ends():
    roving, alice = app(), user()
    node, _ = roving.register_node("n1", 8, 8 << 30, {}, {}, "pool", "127.0.0.1", 9100, T0)
    wid = uuid4()
    roving.submit_workflow(wid, "w", JOB_BESIDE_A_SERVICE, 0, None, alice, T0)
    job = allocation_id(wid, "work", 1)
    fence = roving.place(job, [node], "scheduler", later(1))
    roving.report(node, job, fence, "exited", 0, "", later(5))
    workflow: Workflow = roving.repository.get(wid)
    assert workflow.status == "FINISHED"
    assert workflow.stage("cache").reason == "Stopped: every job ended before it started"
    service: Allocation = roving.repository.get(allocation_id(wid, "cache", 1))
    assert service.ended and service.state.value == "CANCELED"

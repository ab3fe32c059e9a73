"""A crash of `roving up` (kill -9) fails no running job: its local agents detach as it dies, the jobs run on, and the
restarted stack adopts them, with one agent a node."""

from __future__ import annotations

import os
import signal
import time

from api.up.local_agents import agents_on
from tests.e2e.stack import LocalStack
from tests.e2e.test_graceful_stop import alive, runs, started
from tests.unit.agent.job_pids import host_pid


def job(name: str, seconds: int) -> str:
    """No retry: a job its agent stops fails (exit 143), so only a job that ran through finishes."""
    return f"""
version: v4
jobs:
  {name}:
    image: {{uri: docker://alpine:3.20}}
    resource: {{cpu: {{cores: 1}}, memory: {{size: 64MiB}}}}
    script: |
      touch started
      sleep {seconds}
      echo done after {seconds}s
"""


def test_a_job_running_when_roving_up_is_killed_runs_on_and_the_restarted_stack_sees_it_finish(tmp_path):
    first = LocalStack(tmp_path, nodes=1).start()
    try:
        # it ends after the restart: its output waits in a FIFO only while it lives (adapters/adoption.py)
        workflow = first.submit(job("long", 25), "long")
        started(first, workflow)
        first.wait(lambda: runs(first, "long"), 15, "the job to begin")  # its mark in its own directory
        os.kill(first.process.pid, signal.SIGKILL)  # the control plane alone: no graceful stop, no group kill
        first.process.wait(10)
        time.sleep(1.0)  # its agent stopped its job within 0.06 s of the crash, before
        pid = host_pid(first.work_dir / "local-1")
        assert alive(pid), "the crash of roving up killed the job"
    finally:
        first.stop(keep_jobs=True)
    second = LocalStack(tmp_path, nodes=1).start()
    try:
        assert len(agents_on(second.work_dir / "local-1")) == 1, "two agents on one node"
        done = second.wait_status(workflow, ("FINISHED", "FAILED"), timeout=60)
        stage = done["stages"][0]
        assert (done["status"], stage["attempts"], stage["exit_code"]) == ("FINISHED", 1, 0), stage
        assert "done after 25s" in second.stage_log(workflow, "long", "done after 25s")
    finally:
        second.stop()

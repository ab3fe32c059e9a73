"""A graceful stop of `roving up` keeps its jobs alive: the local agents detach, the jobs run on, and the restarted
stack's agents adopt them and report their ends; a job whose node does not come back follows `retry.on: [node]`."""

from __future__ import annotations

import os

from adapters.adoption import found_jobs
from api.agent.pipe_keeper import release_pipes
from tests.e2e.stack import LocalStack
from tests.unit.agent.job_pids import host_pid, kill_job


def job(name: str, seconds: int, cpus: int = 1) -> str:
    """A job that marks in its own directory that it runs (it writes nowhere else), runs `seconds`, says it is done;
    a second attempt (its directory <stage>-2) says so at once."""
    return f"""
version: v4
jobs:
  {name}:
    image: {{uri: docker://alpine:3.20}}
    resource: {{cpu: {{cores: {cpus}}}, memory: {{size: 64MiB}}}}
    script: |
      case "$PWD" in *-1) ;; *) echo second attempt; exit 0;; esac
      touch started
      sleep {seconds}
      echo done after {seconds}s
    policy:
      retry: {{on: [node], attempts: 2}}
"""


def runs(stack: LocalStack, name: str) -> bool:
    """The first attempt of `name` has begun on some local node (its mark in its own directory)."""
    return any(stack.work_dir.glob(f"local-*/*/{name}-1/started"))


def started(stack: LocalStack, workflow_id: str) -> dict:
    stack.wait(lambda: stack.workflow(workflow_id)["stages"][0]["status"] == "STARTED", 30, "the job to start")
    return stack.workflow(workflow_id)["stages"][0]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_job_running_when_roving_up_stops_runs_on_and_the_restarted_stack_sees_it_finish(tmp_path):
    first = LocalStack(tmp_path, nodes=1).start()
    try:
        workflow = first.submit(job("long", 12), "long")
        started(first, workflow)
        first.wait(lambda: runs(first, "long"), 15, "the job to begin")
    finally:
        first.stop(keep_jobs=True)
    pid = host_pid(first.work_dir / "local-1")  # its `$$` may be its pid namespace's (tests.unit.agent.job_pids)
    assert alive(pid), "stopping roving up killed the job"
    second = LocalStack(tmp_path, nodes=1).start()
    try:
        done = second.wait_status(workflow, ("FINISHED", "FAILED"), timeout=60)
        stage = done["stages"][0]
        assert (done["status"], stage["attempts"], stage["exit_code"]) == ("FINISHED", 1, 0), stage
        assert "done after 12s" in second.stage_log(workflow, "long", "done after 12s")
    finally:
        second.stop()


def test_a_detached_job_whose_node_never_comes_back_is_retried_on_another_node(tmp_path):
    # two nodes of 2 cpus, two jobs of 2 cpus: one job on each node
    first = LocalStack(tmp_path, nodes=2, lease_seconds=2.0).start()
    try:
        workflows = [first.submit(job(f"on{n}", 20, cpus=2), f"on{n}") for n in (1, 2)]
        nodes = {w: started(first, w)["node"] for w in workflows}
        first.wait(lambda: all(runs(first, f"on{n}") for n in (1, 2)), 15, "both jobs to run")
    finally:
        first.stop(keep_jobs=True)
    lost = next(w for w in workflows if nodes[w] == "local-2")
    kept = next(w for w in workflows if w != lost)
    kill_job(host_pid(first.work_dir / "local-2"))  # the machine went with its processes
    for files, _ in found_jobs(first.work_dir / "local-2" / ".roving-agent" / "jobs"):
        release_pipes(files)  # its agent's keeper of the job's output pipes too
    second = LocalStack(tmp_path, nodes=1, lease_seconds=2.0).start()  # local-2 never comes back
    try:
        done = second.wait_status(lost, ("FINISHED", "FAILED"), timeout=90)
        stage = done["stages"][0]
        assert (done["status"], stage["attempts"], stage["node"]) == ("FINISHED", 2, "local-1"), stage
        assert second.workflow(kept)["stages"][0]["attempts"] == 1  # adopted on local-1, still its first attempt
    finally:
        second.stop()



WHILE_AWAY = """
version: v4
jobs:
  away:
    image: {uri: docker://alpine:3.20}
    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}
    script: |
      touch started
      while [ ! -e go ]; do sleep 0.1; done
      echo "written while roving was stopped"
"""


def test_output_a_job_writes_and_ends_with_while_roving_up_is_stopped_is_in_its_log_after_the_restart(tmp_path):
    first = LocalStack(tmp_path, nodes=1).start()
    try:
        workflow = first.submit(WHILE_AWAY, "away")
        started(first, workflow)
        first.wait(lambda: runs(first, "away"), 15, "the job to begin")
    finally:
        first.stop(keep_jobs=True)
    pid = host_pid(first.work_dir / "local-1")
    # it writes its last line and ends while no agent and no control plane run (told in its own directory: the rest
    # of the node is read-only to it)
    next(first.work_dir.glob("local-*/*/away-1")).joinpath("go").touch()
    first.wait(lambda: not alive(pid), 15, "the job to end")
    second = LocalStack(tmp_path, nodes=1).start()
    try:
        assert second.wait_status(workflow, ("FINISHED", "FAILED"), timeout=60)["status"] == "FINISHED"
        assert "written while roving was stopped" in second.stage_log(workflow, "away", "written while roving")
    finally:
        second.stop()

"""A user's first hour: submit workflows to the local stack and watch them really run."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_a_workflow_of_several_jobs_runs_to_finished_with_exit_codes_and_logs(stack):
    workflow_id = stack.submit((EXAMPLES / "hello.yaml").read_text(), "hello")
    done = stack.wait_status(workflow_id, ("FINISHED", "FAILED"))
    assert done["status"] == "FINISHED"
    assert [(s["name"], s["status"], s["exit_code"]) for s in done["stages"]] == [
        ("hello", "FINISHED", 0), ("goodbye", "FINISHED", 0)]
    assert "hello from hello" in stack.stage_log(workflow_id, "hello", "hello from hello")


LAST_WORDS = """version: v4
jobs:
  talk:
    image: {uri: docker://alpine:3.20}
    script: |
      for i in 1 2 3; do echo "line $i"; done
      echo "last words"
    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}
"""


def test_the_log_of_a_finished_stage_holds_its_last_line_the_moment_it_is_finished(stack):
    for attempt in range(3):  # the agent sent output every 0.2 s: the exit could land first, and often did
        workflow_id = stack.submit(LAST_WORDS, f"last-words-{attempt}")
        deadline = time.monotonic() + 60
        while stack.workflow(workflow_id)["status"] not in ("FINISHED", "FAILED") and time.monotonic() < deadline:
            time.sleep(0.005)
        log = stack.client.get(f"/v4/workflows/{workflow_id}/log/talk").text  # read once, at once
        assert stack.workflow(workflow_id)["status"] == "FINISHED", log
        assert log.splitlines()[-1:] == ["last words"], log


def test_a_listed_exit_code_is_retried_and_the_activity_says_so(stack):
    # the marker in a workflow volume: it outlives the first attempt (a job writes nowhere else on the node)
    definition = """
version: v4
volumes:
  state: {reference: volume://user/ephemeral}
jobs:
  flaky:
    image: {uri: docker://alpine:3.20}
    script: |
      if [ ! -f /state/flaky-once ]; then touch /state/flaky-once; exit 75; fi
      echo recovered
    mounts: {/state: {volume: state}}
    policy:
      retry: {on: [75], attempts: 2}
"""
    workflow_id = stack.submit(definition, "flaky")
    done = stack.wait_status(workflow_id, ("FINISHED", "FAILED"))
    assert done["status"] == "FINISHED"
    assert done["stages"][0]["attempts"] == 2
    assert any("exit 75" in e["message"] for e in stack.events(workflow_id))


def test_an_exit_code_not_listed_fails_and_says_which_field_to_set(stack):
    definition = """
version: v4
jobs:
  broken:
    image: {uri: docker://alpine:3.20}
    command: [sh, -c, "exit 3"]
"""
    done = stack.wait_status(stack.submit(definition, "broken"), ("FINISHED", "FAILED"))
    stage = done["stages"][0]
    assert (done["status"], stage["exit_code"]) == ("FAILED", 3)
    assert "policy.retry" in stage["reason"]


def test_the_execute_timeout_kills_a_job_that_runs_too_long(stack):
    definition = """
version: v4
jobs:
  sleepy:
    image: {uri: docker://alpine:3.20}
    command: [sleep, "60"]
    policy:
      timeout: {execute: 1s}
"""
    done = stack.wait_status(stack.submit(definition, "sleepy"), ("FINISHED", "FAILED"), timeout=30)
    assert done["status"] == "FAILED"
    assert done["stages"][0]["exit_code"] != 0


def test_an_invalid_file_is_refused_with_every_problem_by_path(stack):
    bad = "version: v4\njobs:\n  a:\n    image: {uri: alpine}\n    policy: {retry: {on: [130]}}\n"
    answer = stack.client.post("/v4/workflows", json={"name": "bad", "definition": bad})
    assert answer.status_code == 400
    paths = {e["path"] for e in answer.json()["errors"]}
    assert any(p.startswith("jobs.a.image") for p in paths)
    assert any(p.startswith("jobs.a.policy.retry.on") for p in paths)


def test_a_raw_yaml_body_is_accepted(stack):
    answer = stack.client.post("/v4/workflows", content=(EXAMPLES / "hello.yaml").read_bytes(),
                               headers={"content-type": "application/yaml"})
    assert answer.status_code == 201, answer.text


def test_stopping_a_running_workflow_cancels_it(stack):
    definition = """
version: v4
jobs:
  long:
    image: {uri: docker://alpine:3.20}
    command: [sleep, "120"]
"""
    workflow_id = stack.submit(definition, "long")
    stack.wait(lambda: stack.workflow(workflow_id)["stages"][0]["status"] == "STARTED", 30, "the job to start")
    assert stack.client.patch(f"/v4/workflows/{workflow_id}:stop").status_code in (200, 202, 204)
    assert stack.wait_status(workflow_id, ("CANCELED",), timeout=30)["status"] == "CANCELED"


def test_why_names_the_holds_that_keep_a_job_waiting_and_it_runs_once_they_go(stack):
    for node in ("local-1", "local-2"):
        assert stack.client.post(f"/v4/nodes/{node}/cordon", json={"reason": "rack maintenance"}).status_code == 201
    try:
        workflow_id = stack.submit((EXAMPLES / "hello.yaml").read_text(), "held")

        def why() -> list[dict]:
            return stack.client.get(f"/v4/workflows/{workflow_id}/why").json()["stages"]

        stack.wait(lambda: any(s["reason"] == "NODE_HELD" for s in why()), 30, "a NODE_HELD why-answer")
        held = next(s for s in why() if s["reason"] == "NODE_HELD")
        assert held["stage"] == "hello" and "rack maintenance" in str(held["detail"])
    finally:
        for node in ("local-1", "local-2"):
            stack.client.post(f"/v4/nodes/{node}/uncordon")
    assert stack.wait_status(workflow_id, ("FINISHED", "FAILED"))["status"] == "FINISHED"


MOUNTED = """
version: v4
volumes:
  v: {reference: volume://user/ephemeral}
jobs:
  write:
    image: {uri: docker://alpine}
    mounts: {/scratch: {volume: v}}
    script: echo from-write > /scratch/data.txt
  read:
    image: {uri: docker://alpine}
    mounts: {/scratch: {volume: v}}
    depends-on: [{name: write, status: FINISHED}]
    script: cat /scratch/data.txt && test ! -e scratch
"""


def test_a_volume_is_at_the_path_the_fuzzfile_mounts_it_on_the_host_runtime(stack):
    if shutil.which("bwrap") is None:
        import pytest

        pytest.skip("the host runtime mounts volumes at their paths with bubblewrap: apt-get install bubblewrap")
    workflow_id = stack.submit(MOUNTED, "mounted")
    done = stack.wait_status(workflow_id, ("FINISHED", "FAILED"))
    assert done["status"] == "FINISHED", stack.client.get(f"/v4/workflows/{workflow_id}/log/write").text
    assert "from-write" in stack.stage_log(workflow_id, "read", "from-write")


BIG = """version: v4
jobs:
  train:
    image: {uri: docker://alpine:3.20}
    script: |
      head -c 30000000 /dev/zero | tr '\\0' x
      echo
      echo "last line"
    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}
"""
SIZE = 30_000_000 + len("\nlast line\n")


def test_a_stage_that_writes_30_mb_and_a_last_line_has_all_of_it_in_its_log(stack):
    began = time.monotonic()
    workflow_id = stack.submit(BIG, "big-output")
    assert stack.wait_status(workflow_id, ("FINISHED", "FAILED"), timeout=120)["status"] == "FINISHED"
    path = f"/v4/workflows/{workflow_id}/log/train"
    whole = stack.client.get(path, timeout=120)
    took = time.monotonic() - began
    assert len(whole.content) == SIZE and whole.headers["Roving-Log-Total"] == str(SIZE), f"after {took:.1f} s"
    assert whole.content.count(b"x") == 30_000_000 and whole.text.endswith("x\nlast line\n")
    tail = stack.client.get(path, params={"offset": -10})
    assert tail.content == b"last line\n" and tail.headers["Roving-Log-Offset"] == str(SIZE - 10)

"""Application profiles and hooks on the README stack: a profile's env reaches the job and cannot be overridden,
its hooks run around the job (the post hook's output in the log even after an execute timeout), a failing pre hook
fails the stage naming the hook."""

from __future__ import annotations

PROFILE = {"env": {"MODEL_DIR": "/models"}, "pre": "echo warming up", "hook_timeout": "10s",
           "post": 'echo "cleaned up after: $ROVING_EXIT_REASON"'}


def job(script: str, extra: str = "", profile: str = "omp") -> str:
    return f"""
version: v4
jobs:
  train:
    image: {{uri: docker://alpine:3.20}}
    profile: {profile}
    script: |
      {script}
{extra}"""


def test_a_profile_s_env_reaches_the_job_and_its_post_hook_runs_after_an_execute_timeout(stack):
    assert stack.client.put("/v4/profiles/omp", json=PROFILE).status_code == 200
    timed = "    policy: {timeout: {execute: 2s}}\n"
    workflow_id = stack.submit(job('echo "model dir is $MODEL_DIR"; sleep 60', timed))
    done = stack.wait_status(workflow_id, ("FINISHED", "FAILED"))
    assert done["status"] == "FAILED"
    stack.wait(lambda: "cleaned up" in stack.client.get(f"/v4/workflows/{workflow_id}/log/train").text, 20,
               "the post hook's output in the log")
    log = stack.client.get(f"/v4/workflows/{workflow_id}/log/train").text.splitlines()
    assert log[:2] == ["[roving pre-hook] warming up", "model dir is /models"]
    assert "[roving post-hook] cleaned up after: execute timeout of 2s reached" in log
    assert any("Bound to profile omp (revision 1)" in e["message"] for e in stack.events(workflow_id))


def test_a_job_that_overrides_a_profile_value_is_refused_naming_the_key_and_the_profile(stack):
    assert stack.client.put("/v4/profiles/omp", json=PROFILE).status_code == 200
    refused = stack.client.post("/v4/workflows", json={"name": "w", "definition": job("echo hi",
                                                                                       "    env: [MODEL_DIR=/tmp]\n")})
    assert refused.status_code == 400
    problem = refused.json()["errors"][0]
    assert problem["path"] == "jobs.train.env.MODEL_DIR" and "profile `omp`" in problem["message"]


def test_a_failing_pre_hook_fails_the_stage_naming_the_hook_and_the_post_hook_still_runs(stack):
    assert stack.client.put("/v4/profiles/nolicense", json={**PROFILE, "pre": "echo no license; exit 4"}).status_code == 200
    workflow_id = stack.submit(job("echo never", profile="nolicense"))
    done = stack.wait_status(workflow_id, ("FINISHED", "FAILED"))
    stage = done["stages"][0]
    assert (done["status"], stage["exit_code"]) == ("FAILED", 4)
    assert stage["reason"] == "Failed: pre hook of profile nolicense failed: exited with code 4 (exit 4)"
    stack.wait(lambda: "cleaned up" in stack.client.get(f"/v4/workflows/{workflow_id}/log/train").text, 20,
               "the post hook's output in the log")
    log = stack.client.get(f"/v4/workflows/{workflow_id}/log/train").text
    assert "never" not in log and "[roving pre-hook] no license" in log

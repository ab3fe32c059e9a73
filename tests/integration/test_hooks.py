"""Pre and post hooks on real processes: marked in the stage's log, a failing pre hook named in the exit reason,
post hooks after every ending (exit, execute timeout, cancel, OOM kill) within their own timeout."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from adapters import cgroups
from adapters.executor import Executor
from domain.fuzzfile.stages import Hook
from tests.integration.test_executor import Recorder, run, spec

PRE = Hook("pre", "profile gpu", "echo warming $MODEL_DIR", 5)
POST = Hook("post", "profile gpu", 'echo "cleanup after $ROVING_EXIT_CODE: $ROVING_EXIT_REASON"', 5)


@pytest.fixture
def executor(tmp_path: Path) -> Executor:
    return Executor(tmp_path / "work", kill_grace=0.3)


def test_the_pre_hook_runs_before_the_job_in_its_environment_and_the_post_hook_after_it(executor):
    recorder, (code, _) = run(executor, spec(script="echo job", env={"MODEL_DIR": "/models"}, hooks=[PRE, POST]))
    assert code == 0
    assert recorder.text().splitlines() == ["[roving pre-hook] warming /models", "job",
                                            "[roving post-hook] cleanup after 0: exited with code 0"]


def test_a_failing_pre_hook_ends_the_job_with_a_reason_naming_the_hook_and_post_hooks_still_run(executor):
    failing = Hook("pre", "profile gpu", "echo no license; exit 3", 5)
    recorder, (code, reason) = run(executor, spec(script="echo job", hooks=[failing, POST]))
    assert (code, reason) == (3, "pre hook of profile gpu failed: exited with code 3")
    assert "job" not in recorder.text().splitlines()
    assert recorder.text().splitlines()[0] == "[roving pre-hook] no license"
    assert "[roving post-hook] cleanup after 3: pre hook of profile gpu failed: exited with code 3" in recorder.text()


def test_a_pre_hook_over_its_timeout_is_killed_and_named(executor):
    slow = Hook("pre", "job", "sleep 30", 0.5)
    _, (code, reason) = run(executor, spec(script="echo job", hooks=[slow]))
    assert (code, reason) == (137, "pre hook of job timed out after 0.5s")


def test_the_post_hook_output_is_in_the_log_after_an_execute_timeout(executor):
    recorder, (code, reason) = run(executor, spec(script="sleep 30", execute_timeout_seconds=0.5, hooks=[POST]))
    assert reason == "execute timeout of 0.5s reached"
    assert f"[roving post-hook] cleanup after {code}: execute timeout of 0.5s reached" in recorder.text()


def test_the_post_hook_runs_after_a_cancel_and_is_killed_at_its_own_timeout(executor):
    hung = Hook("post", "job", "echo started; sleep 30", 0.5)
    recorder = Recorder()
    running = executor.start(spec(script="sleep 30", hooks=[hung]), recorder.output, recorder.exit)
    running.cancel("workflow stopped")
    assert running.wait(10) is not None
    assert recorder.text().splitlines()[-2:] == ["[roving post-hook] started",
                                                 "[roving post-hook] (job) timed out after 0.5s"]
    assert [reason for _, reason in recorder.exits] == ["workflow stopped"]  # TERM, or KILL if it came too early


def test_the_post_hook_output_is_in_the_log_after_an_oom_kill(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("cgroups need root (CI runs as root)")
    hierarchy, why = cgroups.detect(f"test-{uuid.uuid4().hex[:8]}")
    if hierarchy is None:
        pytest.skip(f"no usable cgroups: {why}")
    try:
        executor = Executor(tmp_path / "work", kill_grace=0.3, cgroups=hierarchy)
        hog = spec(memory_bytes=64 * 2**20, command=["python3", "-c", "x = b'1' * (300 << 20)"], hooks=[POST])
        recorder, (code, reason) = run(executor, hog, timeout=30)
        assert (code, reason) == (137, "out of memory: killed at its memory limit of 64MiB")
        assert f"[roving post-hook] cleanup after 137: {reason}" in recorder.text()
    finally:
        hierarchy.reap()
        hierarchy.close()

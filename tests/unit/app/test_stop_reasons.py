"""Why a stage stopped names the readiness probe or the execute timeout, not only `exit 143 (stopped by SIGTERM)`."""

from __future__ import annotations

from uuid import uuid4

from domain.app.ids import allocation_id
from tests.unit.app.builders import T0, app, later, user

PROBE_FAILED = "readiness probe failed 3 times: HTTP 503 from /healthz"
SERVICE = """
version: v4
services:
  model:
    image: {uri: docker://alpine}
    script: serve
"""
TIMED = """
version: v4
jobs:
  train:
    image: {uri: docker://alpine}
    script: train
    policy: {timeout: {execute: 30s}, retry: {on: [137], attempts: 1}}
"""


def ended(definition: str, stage: str, code: int, told: str, attempts: int = 1) -> str:
    roving, wid = app(), uuid4()
    node, _ = roving.register_node("n1", 8, 8 << 30, {}, {}, "pool", "127.0.0.1", 9100, T0)
    roving.submit_workflow(wid, "w", definition, 0, None, user(), T0)
    for attempt in range(1, attempts + 1):
        aid = allocation_id(wid, stage, attempt)
        fence = roving.place(aid, [node], "scheduler", later(10 * attempt))
        roving.report(node, aid, fence, "exited", code, told, later(10 * attempt + 5))
    return roving.repository.get(wid).stage(stage).reason


def test_a_service_killed_by_its_readiness_probe_names_the_probe():
    assert ended(SERVICE, "model", 143, PROBE_FAILED) == f"Failed: {PROBE_FAILED} (exit 143)"


def test_a_job_stopped_at_its_execute_timeout_names_the_timeout_when_retried_and_when_it_fails():
    timeout = "execute timeout of 30s reached"
    assert ended(TIMED, "train", 137, timeout).startswith(f"Retried after {timeout} (exit 137)")
    assert ended(TIMED, "train", 137, timeout, attempts=2).startswith(f"Failed: {timeout} (exit 137); retries exhausted")


def test_an_ordinary_exit_keeps_its_own_words():
    assert ended(SERVICE, "model", 143, "stopped by the control plane") == \
        "Failed: exit 143 (stopped by SIGTERM; never retried)"


def test_a_job_killed_at_its_memory_limit_says_out_of_memory_not_only_its_exit_code():
    oom = "out of memory: killed at its memory limit of 64MiB"
    plain = TIMED.replace("policy: {timeout: {execute: 30s}, retry: {on: [137], attempts: 1}}", "")
    assert ended(plain, "train", 137, oom).startswith(f"Failed: {oom} (exit 137)")
    assert ended(TIMED, "train", 137, oom).startswith(f"Retried after {oom} (exit 137)")


def test_a_job_evicted_without_retry_on_node_fails_with_the_evictions_reason():
    roving, wid = app(), uuid4()
    node, _ = roving.register_node("n1", 8, 8 << 30, {}, {}, "pool", "127.0.0.1", 9100, T0)
    roving.submit_workflow(wid, "w", TIMED.replace("policy: {timeout: {execute: 30s}, retry: {on: [137], attempts: 1}}",
                                                   ""), 0, None, user(), T0)
    roving.place(allocation_id(wid, "train", 1), [node], "scheduler", later(10))
    from tests.unit.app.builders import ADMIN
    roving.evict(node, "disk replacement", ADMIN, later(20))
    reason = roving.repository.get(wid).stage("train").reason
    assert reason == "Failed: evicted from n1: disk replacement (to retry, add node to policy.retry.on)"

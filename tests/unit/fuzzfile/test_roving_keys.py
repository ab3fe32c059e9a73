"""Roving's own keys on a job: `profile:` and `roving-hooks:` (its own pre and post scripts, with a timeout)."""

from __future__ import annotations

from domain.fuzzfile import list_stages, parse_fuzzfile
from domain.fuzzfile.policy import RetryRule
from domain.fuzzfile.semantics import decide_exit

JOB = """
version: v4
jobs:
  train:
    image: {uri: docker://alpine}
    script: echo hi
"""


def test_a_job_s_own_hooks_become_its_stage_s_hooks_with_their_timeout():
    parsed = parse_fuzzfile(JOB + "    roving-hooks: {pre: echo before, post: echo after, timeout: 2m}\n")
    hooks = list_stages(parsed.definition)[0].hooks
    assert [(h.when, h.source, h.script, h.timeout_seconds) for h in hooks] == [
        ("pre", "job", "echo before", 120.0), ("post", "job", "echo after", 120.0)]


def test_a_bad_hook_timeout_or_profile_name_is_refused_naming_the_field():
    parsed = parse_fuzzfile(JOB + "    profile: GPU_Profile\n    roving-hooks: {post: echo after, timeout: 2 days}\n")
    assert [p.path for p in parsed.errors] == ["jobs.train.profile", "jobs.train.roving-hooks.timeout"]


def test_an_unknown_hook_key_is_refused_like_any_other_misspelling():
    parsed = parse_fuzzfile(JOB + "    roving-hooks: {prehook: echo}\n")
    assert parsed.errors and parsed.errors[0].path.startswith("jobs.train.roving-hooks")


SERVICE = """
version: v4
services:
  db:
    image: {uri: docker://alpine}
    script: serve
"""


def test_a_service_restart_policy_and_its_budget_are_checked_naming_the_field():
    parsed = parse_fuzzfile(SERVICE + "    policy: {restart: always}\n    roving-restart: {attempts: 0, backoff: soon}\n")
    assert [p.path for p in parsed.errors] == ["services.db.policy.restart", "services.db.roving-restart.attempts",
                                               "services.db.roving-restart.backoff"]


def test_on_failure_restarts_a_service_on_any_failing_exit_within_its_budget():
    parsed = parse_fuzzfile(SERVICE + "    policy: {restart: on-failure}\n    roving-restart: {attempts: 4}\n")
    stage = list_stages(parsed.definition)[0]
    assert stage.retry.retries_exit(1) and stage.retry.retries_exit(137) and stage.retry.retries_exit(143)
    assert (stage.retry.attempts, stage.restart_backoff, stage.restart_max_backoff) == (4, 1.0, 60.0)


def test_on_failure_restarts_a_service_killed_by_its_liveness_probe_but_a_job_never_retries_sigterm():
    parsed = parse_fuzzfile(SERVICE + "    policy: {restart: on-failure}\n"
                                      "    roving-liveness-probe: {exec: {command: ['true']}, period-seconds: 5}\n")
    stage = list_stages(parsed.definition)[0]
    assert decide_exit(stage.retry, 143, 0).retry
    assert not decide_exit(RetryRule(exit_codes=[1], attempts=3), 143, 0).retry


def test_a_liveness_probe_is_checked_like_a_readiness_probe():
    parsed = parse_fuzzfile(SERVICE + "    roving-liveness-probe: {period-seconds: 5}\n")
    assert [p.path for p in parsed.errors] == ["services.db.roving-liveness-probe"]

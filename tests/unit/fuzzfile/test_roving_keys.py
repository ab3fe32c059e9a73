"""Roving's own keys on a job: `profile:` and `roving-hooks:` (its own pre and post scripts, with a timeout)."""

from __future__ import annotations

from domain.fuzzfile import list_stages, parse_fuzzfile

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

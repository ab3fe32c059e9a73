"""A retry runs again what did not finish of an ended workflow, as a new workflow: finished jobs left out, the
dependencies on them dropped, failure branches that can no longer run left out too."""

from __future__ import annotations

import msgspec
import pytest

from domain.fuzzfile.parse import parse_fuzzfile
from domain.fuzzfile.retry import NothingToRetry, retry_definition

PIPELINE = """version: v4
volumes:
  scratch: {reference: volume://user/ephemeral}
jobs:
  fetch:
    image: {uri: docker://alpine}
    script: echo fetch
    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}
  train:
    image: {uri: docker://alpine}
    script: exit 1
    depends-on: [{name: fetch, status: FINISHED}]
    task-array: {start: 1, end: 2}
    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}
  report:
    image: {uri: docker://alpine}
    script: echo report
    depends-on: [{name: train, status: FINISHED}]
    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}
  cleanup-after-fetch-failed:
    image: {uri: docker://alpine}
    script: echo cleanup
    depends-on: [{name: fetch, status: FAILED}]
    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}
"""


def submitted() -> dict:
    return msgspec.to_builtins(parse_fuzzfile(PIPELINE).definition)


def test_a_retry_leaves_out_what_finished_and_the_branch_that_waited_on_its_failure():
    stages = [("fetch", "FINISHED"), ("train[1]", "FINISHED"), ("train[2]", "FAILED"), ("report", "CANCELED"),
              ("cleanup-after-fetch-failed", "CANCELED")]
    retried, jobs, warned = retry_definition(submitted(), stages)
    assert jobs == ["train", "report"]  # the whole array again; the cleanup could never run: fetch finished
    assert "depends-on" not in retried["jobs"]["train"]  # fetch FINISHED holds
    assert retried["jobs"]["report"]["depends-on"] == [{"name": "train", "status": "FINISHED"}]
    assert [w.path for w in warned] == ["volumes.scratch"] and "fetch" in warned[0].message
    reparsed = parse_fuzzfile(msgspec.json.encode(retried).decode())
    assert reparsed.errors == [] and sorted(reparsed.definition.jobs) == ["report", "train"]


def test_a_workflow_whose_jobs_all_finished_has_nothing_to_retry():
    stages = [("fetch", "FINISHED"), ("train[1]", "FINISHED"), ("train[2]", "FINISHED"), ("report", "FINISHED"),
              ("cleanup-after-fetch-failed", "FINISHED")]
    with pytest.raises(NothingToRetry):
        retry_definition(submitted(), stages)


def test_a_canceled_workflow_retries_every_job_that_did_not_finish_with_no_warning_when_nothing_finished():
    retried, jobs, warned = retry_definition(submitted(), [("fetch", "CANCELED")])
    assert jobs == ["fetch", "train", "report", "cleanup-after-fetch-failed"] and warned == []
    assert retried == submitted()

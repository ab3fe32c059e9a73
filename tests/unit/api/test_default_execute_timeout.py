"""The cluster's `scheduler.defaultExecuteTimeout` (and per profile, `scheduler.profileExecuteTimeouts`) is given
at submission to each job that sets no execute timeout, so it can backfill, as Slurm's partition DefaultTime; a job
that still has none is named in validate's and submit's warnings (it cannot backfill)."""

from __future__ import annotations

import pytest

from tests.unit.api.harness import Api

UNTIMED = """
version: v4
jobs:
  long:
    image: {uri: docker://alpine}
    command: ["true"]
    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}
  timed:
    image: {uri: docker://alpine}
    command: ["true"]
    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}
    policy: {timeout: {execute: 10m}}
"""
PATH = "jobs.long.policy.timeout.execute"


@pytest.fixture
def api():
    return Api()


def submit(api, token, name="w"):
    return api.request("POST", "/v4/workflows", token, json={"name": name, "definition": UNTIMED})


def configure(api, settings):
    answer = api.request("PUT", "/v4/admin/centralconfig", api.admin, json=settings)
    assert answer.status_code == 200, answer.text


def test_without_a_cluster_default_validate_and_submit_warn_that_the_untimed_job_cannot_backfill(api):
    checked = api.request("POST", "/v4/workflows:validate", api.admin, json={"definition": UNTIMED}).json()
    assert [w["path"] for w in checked["warnings"]] == [PATH]
    assert "cannot backfill" in checked["warnings"][0]["message"]
    created = submit(api, api.admin)
    assert created.status_code == 201 and [w["path"] for w in created.json()["warnings"]] == [PATH]


def timeouts(api, workflow_id):
    """Each stage's execute timeout as the scheduler's queue holds it (what backfill plans with)."""
    queue = api.request("GET", "/v4/scheduler/queue", api.admin).json()["queue"]
    return {row["stage"]: row["execute_timeout_seconds"] for row in queue if row["workflow_id"] == workflow_id}


def test_the_cluster_default_is_given_to_the_untimed_job_and_the_warning_goes(api):
    configure(api, {"scheduler.defaultExecuteTimeout": "2h"})
    created = submit(api, api.admin)
    assert created.status_code == 201 and created.json()["warnings"] == []
    assert timeouts(api, created.json()["id"]) == {"long": 7200, "timed": 600}


def test_a_profile_default_wins_over_the_cluster_default(api):
    configure(api, {"scheduler.defaultExecuteTimeout": "2h", "scheduler.profileExecuteTimeouts": {"gpu": "30m"}})
    assert api.request("PUT", "/v4/profiles/gpu", api.admin, json={"env": {"GPU": "1"}}).status_code in (200, 201)
    definition = UNTIMED.replace("  long:\n", "  long:\n    profile: gpu\n")
    created = api.request("POST", "/v4/workflows", api.admin, json={"name": "p", "definition": definition})
    assert created.status_code == 201, created.text
    assert timeouts(api, created.json()["id"]) == {"long": 1800, "timed": 600}


def test_a_bad_default_is_refused_naming_the_key(api):
    answer = api.request("PUT", "/v4/admin/centralconfig", api.admin,
                         json={"scheduler.defaultExecuteTimeout": "forever"})
    assert answer.status_code == 400 and "scheduler.defaultExecuteTimeout" in answer.text
    answer = api.request("PUT", "/v4/admin/centralconfig", api.admin,
                         json={"scheduler.profileExecuteTimeouts": {"gpu": "400d"}})
    assert answer.status_code == 400 and "gpu" in answer.text and "at most 365 days" in answer.text

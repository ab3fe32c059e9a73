"""Whom a job runs as: its owner's uid and gids under a root agent, the fallback for old work, the agent itself
when the agent is not root, and never uid 0 unless the agent allows root jobs."""

from __future__ import annotations

import pytest

from adapters.runspec import JobUser, RunSpec, SpecError, local_spec, user_for
from tests.unit.agent.fake_api import A1

NOBODY = JobUser(uid=65534, gid=65534, name="nobody")


def spec(**fields) -> RunSpec:
    return local_spec(allocation_id=A1, epoch=1, workflow_id="wf", stage="train", **fields)


def test_a_root_agent_runs_a_job_as_its_owner_with_the_owners_groups():
    owned = spec(uid=100003, gid=200001, groups=[200001, 200007], username="alice")
    assert user_for(owned, NOBODY) == JobUser(uid=100003, gid=200001, name="alice", groups=(200001, 200007))


def test_an_owner_in_no_group_gets_a_primary_gid_equal_to_the_uid():
    assert user_for(spec(uid=100004, username="bob"), NOBODY) == JobUser(uid=100004, gid=100004, name="bob")


def test_work_submitted_before_owners_had_uids_runs_as_the_fallback_user():
    assert user_for(spec(), NOBODY) is NOBODY


def test_a_non_root_agent_runs_every_job_as_itself():
    assert user_for(spec(uid=100003, gid=200001), None) is None


def test_uid_0_is_refused_unless_the_agent_allows_root_jobs():
    with pytest.raises(SpecError, match="uid or gid 0"):
        user_for(spec(uid=0, gid=0), NOBODY)
    with pytest.raises(SpecError, match="uid or gid 0"):
        user_for(spec(uid=100003, gid=200001, groups=[0]), NOBODY)
    assert user_for(spec(uid=0, gid=0, username="root"), NOBODY, allow_root=True) == JobUser(uid=0, gid=0, name="root")

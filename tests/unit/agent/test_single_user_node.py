"""An agent that runs jobs as its own user (not root) cannot tell tenants apart: it runs only its admin's work, and
says why (without bubblewrap, also what to install)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from adapters.executor import RunSpec, SpecError
from adapters.runspec import local_spec
from api.agent.node import check_owner
from tests.unit.agent.fake_api import A1

ADMIN = "14baf7a4-e552-5fe4-9c14-3a7bf0ed134a"


def spec(owner: str) -> RunSpec:
    return local_spec(allocation_id=A1, epoch=1, workflow_id="wf", stage="s", owner_id=owner)


def test_another_owners_work_is_refused_saying_what_to_install():
    executor, config = SimpleNamespace(confined=True, sandbox=None), SimpleNamespace(only_owner=ADMIN)
    check_owner(executor, config, spec(ADMIN))
    with pytest.raises(SpecError, match="runs only its admin's work; install bubblewrap"):
        check_owner(executor, config, spec("another-user"))


def test_another_owners_work_is_refused_by_a_sandboxing_agent_that_is_not_root_saying_why():
    executor, config = SimpleNamespace(confined=True, sandbox=object()), SimpleNamespace(only_owner=ADMIN)
    check_owner(executor, config, spec(ADMIN))
    with pytest.raises(SpecError, match="cannot tell tenants apart: it runs only its admin's work; run roving up as root"):
        check_owner(executor, config, spec("another-user"))


@pytest.mark.parametrize("confined, sandbox, only", [(False, None, ADMIN), (False, object(), ADMIN), (True, None, "")])
def test_a_node_that_runs_jobs_as_their_owners_or_was_given_no_owner_runs_everyones(confined, sandbox, only):
    check_owner(SimpleNamespace(confined=confined, sandbox=sandbox), SimpleNamespace(only_owner=only),
                spec("another-user"))


def test_roving_up_says_at_start_that_a_pool_it_cannot_confine_is_single_user(monkeypatch):
    import adapters.runtime.host as host
    from api.up import main

    monkeypatch.setattr(host.HostSandbox, "found", classmethod(lambda cls, hidden=(): None))
    monkeypatch.setattr(main.os, "geteuid", lambda: 1000)
    said = main.pool_warning(local_agents=True)
    assert "single-user" in said and "only the admin's work" in said and "apt-get install bubblewrap" in said
    monkeypatch.setattr(main.os, "geteuid", lambda: 0)
    assert "cannot mount volumes at their Fuzzfile paths" in main.pool_warning(local_agents=True)
    monkeypatch.setattr(host.HostSandbox, "found", classmethod(lambda cls, hidden=(): object()))
    assert main.pool_warning(local_agents=True) == "" and main.pool_warning(local_agents=False) == ""
    monkeypatch.setattr(main.os, "geteuid", lambda: 1000)
    said = main.pool_warning(local_agents=True)
    assert "single-user" in said and "only the admin's work" in said and "run roving up as root" in said

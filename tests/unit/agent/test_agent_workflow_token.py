"""A job handed FB_WORKFLOW_TOKEN finds the API where its agent does (ROVING_API), so `roving` inside it works."""

from __future__ import annotations

from tests.unit.agent.fake_api import A1, A2, FakeApi
from tests.unit.agent.test_agent_loop import assignment, drive


def written(tmp_path, name: str) -> str:
    """What a job wrote in its own work directory (a sandboxed job writes nowhere else)."""
    return next((tmp_path / "work").rglob(name)).read_text().strip()


def test_a_job_with_a_workflow_token_is_told_the_agents_api_address(tmp_path):
    with FakeApi() as api:
        api.start = [assignment(A1, script='echo "$ROVING_API|$FB_WORKFLOW_TOKEN" > seen',
                                env={"FB_WORKFLOW_TOKEN": "rv1.claims.sig"}),
                     assignment(A2, script='echo "${ROVING_API:-none}" > seen.2')]
        drive(api, tmp_path, until=lambda: api.events(A1)[-1:] == [("exited", 1, 0)]
              and api.events(A2)[-1:] == [("exited", 1, 0)])
    assert written(tmp_path, "seen") == f"{api.url}|rv1.claims.sig"
    assert written(tmp_path, "seen.2") == "none"  # no token: nothing to reach the API with


def test_a_stage_that_sets_roving_api_itself_keeps_its_own(tmp_path):
    with FakeApi() as api:
        api.start = [assignment(A1, script='echo "$ROVING_API" > seen',
                                env={"FB_WORKFLOW_TOKEN": "rv1.claims.sig", "ROVING_API": "https://api.example"})]
        drive(api, tmp_path, until=lambda: api.events(A1)[-1:] == [("exited", 1, 0)])
    assert written(tmp_path, "seen") == "https://api.example"

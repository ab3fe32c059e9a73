"""FB_WORKFLOW_TOKEN: a running stage's token starts child workflows as its owner, whose `secret://` references
resolve; it cannot create secrets or reach anything else, ends with its workflow, and can be revoked."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

import msgspec
import pytest

from adapters.auth.tokens import Identity, issue_workflow
from api.http.workflow_tokens import VARIABLE, WorkflowTokens, with_workflow_tokens
from domain.agent_protocol import Assignments, Start
from domain.app.ids import allocation_id
from domain.tenancy import Role, Source
from tests.unit.api.harness import KEY, Api, token

AGENT = token("agent", Role.USER, source=Source.AGENT)
PARENT = """
version: v1
jobs:
  parent:
    image: {uri: docker://alpine}
    script: roving workflow start child.yaml
    resource: {cpu: {cores: 1}, memory: {size: 1GiB}}
"""
CHILD = """
version: v1
jobs:
  child:
    image: {uri: docker://alpine}
    env: [HF_TOKEN=secret://user/hf]
    script: echo child
    resource: {cpu: {cores: 1}, memory: {size: 1GiB}}
"""


class World:
    """alice (org acme) ran PARENT; its stage is placed on node n1."""

    def __init__(self) -> None:
        self.api = Api()
        self.org, self.alice = self.api.organization_with_user("acme", "alice")
        self.node = self.api.request("POST", "/v4/agent/register", AGENT, json={
            "name": "n1", "cpu": 8, "memory": 32 * 2**30, "definition": "local"}).json()["node_id"]
        self.secret = "hf_value_never_shown"
        assert self.api.request("POST", "/v4/secrets", self.alice, json={"name": "hf", "value": self.secret}).status_code == 201
        self.parent = self.submit(PARENT, self.alice)

    def submit(self, definition: str, bearer: str) -> str:
        answer = self.api.request("POST", "/v4/workflows", bearer, json={"name": "w", "definition": definition})
        assert answer.status_code == 201, answer.text
        return answer.json()["id"]

    def place(self, workflow: str, stage: str) -> None:
        roving = self.api.services.roving
        roving.place(allocation_id(UUID(workflow), stage, 1), [UUID(self.node)], "scheduler", datetime.now(UTC))
        self.api.services.tailer.wait_for(roving.last_position)

    def assignments(self):
        return self.api.request("GET", "/v4/agent/assignments", AGENT, params={"node_id": self.node})

    def started(self, workflow: str) -> dict:
        return next(s for s in self.assignments().json()["start"] if s["workflow_id"] == workflow)


@pytest.fixture
def world():
    built = World()
    built.place(built.parent, "parent")
    return built


def test_a_running_stage_is_handed_its_workflows_token_in_its_env(world):
    env = world.started(world.parent)["env"]
    assert env[VARIABLE].startswith("rv1.")
    whoami = world.api.request("GET", "/v4/auth/whoami", env[VARIABLE])
    assert whoami.status_code == 200 and whoami.json()["username"] == "alice"


def test_handing_out_tokens_writes_nothing_and_leaves_the_etag_alone(world):
    position = world.api.services.roving.last_position
    first, second = world.assignments(), world.assignments()
    assert world.api.services.roving.last_position == position
    assert first.headers["etag"] == second.headers["etag"]


def test_a_child_started_with_the_token_is_the_owners_and_its_secret_resolves(world):
    parent_token = world.started(world.parent)["env"][VARIABLE]
    child = world.submit(CHILD, parent_token)
    detail = world.api.request("GET", f"/v4/workflows/{child}", parent_token).json()
    assert detail["submitted_by"] == "alice"
    assert world.api.request("GET", f"/v4/workflows/{child}", world.alice).status_code == 200
    world.place(child, "child")
    spec = world.started(child)
    assert spec["env"]["HF_TOKEN"] == world.secret  # resolved for the child's agent, as for any of alice's jobs


def test_the_token_lists_secret_names_but_creating_or_deleting_a_secret_is_403(world):
    bearer = world.started(world.parent)["env"][VARIABLE]
    listed = world.api.request("GET", "/v4/secrets", bearer)
    assert listed.status_code == 200 and [s["name"] for s in listed.json()["secrets"]] == ["hf"]
    assert world.secret not in listed.text
    created = world.api.request("POST", "/v4/secrets", bearer, json={"name": "mine", "value": "v"})
    assert created.status_code == 403 and "workflow token" in created.json()["error"]
    secret = listed.json()["secrets"][0]["id"]
    assert world.api.request("DELETE", f"/v4/secrets/{secret}", bearer).status_code == 403


@pytest.mark.parametrize("method, path", [("GET", "/v4/nodes"), ("POST", "/v4/organizations"), ("GET", "/v4/queue"),
                                          ("PUT", "/v4/admin/centralconfig"), ("POST", "/v4/auth/revoke"),
                                          ("GET", "/v4/audit")])
def test_the_token_reaches_nothing_but_workflows_objects_and_secret_names(world, method, path):
    bearer = world.started(world.parent)["env"][VARIABLE]
    answer = world.api.request(method, path, bearer, json={})
    assert answer.status_code == 403 and "a workflow token may not" in answer.json()["error"]


def test_the_token_is_refused_once_its_workflow_has_ended(world):
    bearer = world.started(world.parent)["env"][VARIABLE]
    assert world.api.request("PATCH", f"/v4/workflows/{world.parent}:stop", world.alice).status_code == 200
    world.api.services.tailer.wait_for(world.api.services.roving.last_position)
    answer = world.api.request("POST", "/v4/workflows", bearer, json={"name": "late", "definition": CHILD})
    assert answer.status_code == 401 and "has ended (CANCELED)" in answer.json()["error"]


def test_the_token_is_still_refused_once_its_ended_workflow_has_left_memory(world):
    bearer = world.started(world.parent)["env"][VARIABLE]
    world.api.services.views.hot_workflows = 0  # every finished workflow goes cold at once
    assert world.api.request("PATCH", f"/v4/workflows/{world.parent}:stop", world.alice).status_code == 200
    world.api.services.tailer.wait_for(world.api.services.roving.last_position)
    assert world.api.services.views.workflows.workflow(world.parent) is None
    answer = world.api.request("POST", "/v4/workflows", bearer, json={"name": "late", "definition": CHILD})
    assert answer.status_code == 401 and "has ended (CANCELED)" in answer.json()["error"]


def test_a_revoked_token_is_refused_and_later_stages_get_none(world):
    bearer = world.started(world.parent)["env"][VARIABLE]
    mallory = world.api.organization_with_user("globex", "mallory")[1]
    assert world.api.request("POST", f"/v4/workflows/{world.parent}/token:revoke", mallory).status_code == 404
    revoked = world.api.request("POST", f"/v4/workflows/{world.parent}/token:revoke", world.alice)
    assert revoked.status_code == 201 and revoked.json()["revoked"] is True
    world.api.services.tailer.wait_for(world.api.services.roving.last_position)
    answer = world.api.request("GET", "/v4/auth/whoami", bearer)
    assert answer.status_code == 401 and "revoked" in answer.json()["error"]
    assert VARIABLE not in world.started(world.parent)["env"]


def test_a_token_signed_with_another_key_or_expired_is_refused(world):
    identity = Identity(user_id=uuid4(), username="alice", role=Role.USER, organization_id=None)
    forged = issue_workflow(identity, world.parent, b"x" * 32, timedelta(hours=1), datetime.now(UTC))
    assert world.api.request("GET", "/v4/auth/whoami", forged).status_code == 401
    old = issue_workflow(identity, world.parent, KEY, timedelta(seconds=1), datetime.now(UTC) - timedelta(hours=1))
    answer = world.api.request("GET", "/v4/auth/whoami", old)
    assert answer.status_code == 401 and "expired" in answer.json()["error"]


def pushed_tokens(world, kept: WorkflowTokens, now: datetime) -> str:
    answer = Assignments([msgspec.convert(world.started(world.parent), Start)], [])
    [spec] = with_workflow_tokens(answer, world.api.services.views, KEY, timedelta(days=7), now, kept).start
    return spec.env[VARIABLE]


def test_a_push_within_a_minute_hands_the_stage_the_same_token_and_a_later_one_a_fresh_token(world):
    kept, now = WorkflowTokens(), datetime.now(UTC)
    first = pushed_tokens(world, kept, now)
    assert pushed_tokens(world, kept, now + timedelta(seconds=30)) == first
    later = pushed_tokens(world, kept, now + timedelta(seconds=61))
    assert later != first
    whoami = world.api.request("GET", "/v4/auth/whoami", later)
    assert whoami.status_code == 200 and whoami.json()["username"] == "alice"


def test_a_revoked_workflow_gets_no_token_in_the_next_push_even_within_the_minute(world):
    kept, now = WorkflowTokens(), datetime.now(UTC)
    pushed_tokens(world, kept, now)
    assert world.api.request("POST", f"/v4/workflows/{world.parent}/token:revoke", world.alice).status_code == 201
    world.api.services.tailer.wait_for(world.api.services.roving.last_position)
    answer = Assignments([msgspec.convert(world.started(world.parent), Start)], [])
    [spec] = with_workflow_tokens(answer, world.api.services.views, KEY, timedelta(days=7), now, kept).start
    assert VARIABLE not in spec.env


def test_an_agents_token_still_starts_no_workflow(world):
    answer = world.api.request("POST", "/v4/workflows", AGENT, json={"name": "w", "definition": CHILD})
    assert answer.status_code == 403


def test_issuing_costs_microseconds_a_stage(world):
    """The hot-path cost: signing happens in memory where the stage is handed out (no log write, no request)."""
    views = world.api.services.views
    answer = Assignments([msgspec.convert(world.started(world.parent), Start)] * 1000, [])
    began = time.perf_counter()
    with_workflow_tokens(answer, views, KEY, timedelta(days=7), datetime.now(UTC))
    per_stage = (time.perf_counter() - began) / 1000
    assert per_stage < 0.001, f"{per_stage * 1e6:.0f} µs a stage"


def test_inside_a_job_the_cli_speaks_with_the_workflows_token_over_any_saved_login(tmp_path):
    from api.cli.client import current_context, save_contexts
    saved = tmp_path / "config.yaml"
    save_contexts({"current": "default", "contexts": {"default": {"api": "http://saved", "token": "person",
                                                                  "refresh_token": "r"}}}, saved)
    inside = current_context({"FB_WORKFLOW_TOKEN": "rv1.job", "ROVING_API": "http://agent-sees"}, saved)
    assert inside == {"api": "http://agent-sees", "token": "rv1.job", "refresh_token": ""}
    by_hand = current_context({"FB_WORKFLOW_TOKEN": "rv1.job", "ROVING_TOKEN": "rv1.mine"}, saved)
    assert by_hand["token"] == "rv1.mine"
    assert current_context({}, saved)["token"] == "person"

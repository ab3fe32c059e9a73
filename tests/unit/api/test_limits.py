"""Limits over HTTP: an oversized body is 413, out-of-range Fuzzfiles and priorities are 400 naming the bound."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from uuid import UUID

import pytest

from api.composition.settings import SettingsError, load_settings
from domain.app.errors import Invalid
from tests.unit.api.harness import SYSTEM, Api

MiB = 2**20


@pytest.fixture(scope="module")
def api() -> Api:
    return Api()


def submit_yaml(api: Api, text: str):
    return api.request("POST", "/v4/workflows", api.admin, content=text.encode(),
                       headers={"Content-Type": "application/yaml"})


def fuzzfile(job: str) -> str:
    return f"version: v4\njobs:\n  train:\n    image: {{uri: docker://alpine}}\n    command: [x]\n    {job}\n"


def test_a_100_mb_body_is_413_naming_the_limit(api):
    answer = submit_yaml(api, "x" * (100 * MiB))
    assert answer.status_code == 413
    body = answer.json()
    assert "4,194,304 bytes" in body["error"]
    assert body["errors"] == [{"path": "body", "message": body["error"]}]


def test_a_body_without_a_length_is_cut_off_at_the_limit(api):
    async def chunks():
        for _ in range(8):
            yield b"x" * MiB

    answer = api.request("POST", "/v4/workflows", api.admin, content=chunks(),
                         headers={"Content-Type": "application/yaml"})
    assert answer.status_code == 413
    assert "ROVING_MAX_BODY_BYTES" in answer.json()["error"]


def test_a_body_under_the_limit_is_read_as_before(api):
    answer = submit_yaml(api, fuzzfile("resource: {memory: {size: 1GiB}}"))
    assert answer.status_code == 201, answer.text


def test_a_huge_execute_timeout_is_400_naming_timeout_execute(api):
    answer = submit_yaml(api, fuzzfile("policy: {timeout: {execute: 99999999999999999h}}"))
    assert answer.status_code == 400
    [problem] = answer.json()["errors"]
    assert problem["path"] == "jobs.train.policy.timeout.execute"
    assert "365 days" in problem["message"]


def test_infinite_memory_is_400_naming_the_field(api):
    answer = submit_yaml(api, fuzzfile("resource: {memory: {size: .inf}}"))
    assert answer.status_code == 400
    assert answer.json()["errors"][0]["path"] == "jobs.train.resource.memory.size"


def test_400_jobs_are_a_clear_400_naming_the_cap(api):
    jobs = "".join(f"  j{i}:\n    image: {{uri: docker://alpine}}\n    command: [x]\n" for i in range(400))
    answer = submit_yaml(api, "version: v4\njobs:\n" + jobs)
    assert answer.status_code == 400
    assert "at most 300 stages" in answer.json()["errors"][0]["message"]


def test_a_yaml_alias_bomb_is_400_quickly(api):
    levels = "".join(f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(9))
    text = "version: v4\na: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + levels + \
        "jobs: {train: {image: {uri: docker://alpine}, command: *j}}\n"
    started = time.monotonic()
    answer = submit_yaml(api, text)
    assert answer.status_code == 400
    assert time.monotonic() - started < 5
    assert "YAML aliases" in answer.json()["errors"][0]["message"]


@pytest.mark.parametrize("kind", ["organizations", "users"])
def test_an_int64_max_priority_is_400_naming_the_priority(api, kind):
    org_id, _ = api.organization_with_user(f"limits-{kind}", f"limits-{kind}-user")
    target = org_id if kind == "organizations" else _user_id(api, org_id)
    answer = api.request("PUT", f"/v4/{kind}/{target}/priority", api.admin, json={"priority": 2**63 - 1})
    assert answer.status_code == 400
    [problem] = answer.json()["errors"]
    assert problem["path"] == "priority" and "1000000" in problem["message"]


def test_an_org_owner_setting_a_group_priority_past_the_range_gets_400(api):
    org_id, owner = api.organization_with_user("limits-groups", "limits-owner", role="org_owner")
    group = api.request("POST", f"/v4/organizations/{org_id}/groups", api.admin, json={"name": "g"}).json()["id"]
    assert api.request("PUT", f"/v4/groups/{group}/priority", owner, json={"priority": 1_000_000}).status_code == 200
    answer = api.request("PUT", f"/v4/groups/{group}/priority", owner, json={"priority": 1_000_001})
    assert answer.status_code == 400
    assert answer.json()["errors"][0]["path"] == "priority"


def test_the_body_limit_is_a_setting():
    assert load_settings({}).max_body_bytes == 4 * MiB
    assert load_settings({"ROVING_MAX_BODY_BYTES": "16MiB"}).max_body_bytes == 16 * MiB
    with pytest.raises(SettingsError, match="ROVING_MAX_BODY_BYTES"):
        load_settings({"ROVING_MAX_BODY_BYTES": "1KiB"})


def _user_id(api: Api, org_id: str) -> str:
    users = api.request("GET", f"/v4/organizations/{org_id}/users", api.admin).json()
    rows = users.get("users", users) if isinstance(users, dict) else users
    return str(rows[0]["id"])


def test_the_domain_refuses_an_out_of_range_priority_whatever_the_caller(api):
    org_id, _ = api.organization_with_user("limits-domain", "limits-domain-user")
    with pytest.raises(Invalid) as refused:
        api.services.roving.set_priority("organization", UUID(org_id), -(2**63), SYSTEM,
                                         datetime.now(UTC))
    assert refused.value.problems[0].path == "priority"
    assert "-1,000,000" in refused.value.problems[0].message

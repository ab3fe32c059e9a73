"""`roving mcp` on the README stack, driven by the official MCP SDK's own stdio client as an assistant would: it lists
`workflow_validate`, validates with the server (valid: false with the server's reason; a warning when the server
cannot be asked), lists the catalog though one source cannot be read, lists groups in the scope it describes, and
starts, follows and reads a workflow, all as the caller's own context (their token)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.catalog_fixtures import reference_folder, write_app
from tests.e2e.stack import LocalStack
from tests.unit.api.harness import PASSWORD

pytest.importorskip("mcp", reason="the mcp extra (pip install 'roving[mcp]') is not installed")
from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

ROVING = str(Path(sys.executable).with_name("roving"))
VALID = """version: v4
jobs:
  hello:
    image: {uri: docker://alpine}
    script: echo hello from mcp
    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}
"""
FAR = """version: v4
volumes:
  data: {reference: volume://user/far/data}
jobs:
  use:
    image: {uri: docker://alpine}
    script: ls /data
    mounts: {/data: {volume: data}}
    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    running = LocalStack(tmp_path_factory.mktemp("roving"), nodes=1).start()
    scratch = tmp_path_factory.mktemp("catalog")
    try:
        admin = running.client
        assert admin.put("/v4/admin/centralconfig", json={"storage.local.root": str(scratch / "volumes"),
                                                          "storage.classes": {"far": {"segment": "mars"}}}).is_success
        for name, folder in (("apps", write_app(scratch / "apps", "greeter")),
                             ("broken", reference_folder(scratch / "broken", "blender"))):
            added = admin.post("/v4/catalog/sources", json={"name": name, "location": str(folder), "scope": "cluster"})
            assert added.status_code == 201, added.text
        shutil.rmtree(scratch / "broken")
        running.alice = person(running)
        yield running
    finally:
        running.stop()


def person(stack: LocalStack) -> str:
    """Alice of acme, a member of group lab (acme also has group ops): her token."""
    admin = stack.client
    org = admin.post("/v4/organizations", json={"name": "acme"}).json()["id"]
    body = {"username": "alice", "email": "alice@acme.org", "password": PASSWORD, "role": "user"}
    user = admin.post(f"/v4/organizations/{org}/users", json=body).json()["id"]
    for group in ("lab", "ops"):
        created = admin.post(f"/v4/organizations/{org}/groups", json={"name": group}).json()["id"]
        if group == "lab":
            assert admin.put(f"/v4/groups/{created}/members/{user}", json={"role": "member"}).is_success
    login = httpx.post(f"{stack.url}/v4/auth/login", json={"username": "alice", "password": PASSWORD})
    return login.json()["token"]


def mcp(api: str, token: str, tmp_path: Path, steps):
    """Run `roving mcp` as the given context and `steps(session)` against it; what steps returns."""
    env = {"PATH": os.environ["PATH"], "ROVING_API": api, "ROVING_TOKEN": token, "XDG_CONFIG_HOME": str(tmp_path),
           "HOME": str(tmp_path)}

    async def run():
        server = StdioServerParameters(command=ROVING, args=["mcp"], env=env)
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await steps(session)

    return asyncio.run(run())


async def call(session, tool: str, **arguments):
    result = await session.call_tool(tool, arguments)
    text = result.content[0].text if result.content else ""
    if result.is_error:
        return {"error": text}
    return result.structured_content if result.structured_content is not None else json.loads(text)


def test_roving_mcp_lists_workflow_validate_and_describes_group_lists_default_scope(stack, tmp_path):
    async def steps(session):
        return {t.name: t for t in (await session.list_tools()).tools}

    tools = mcp(stack.url, stack.alice, tmp_path, steps)
    assert {"workflow_validate", "catalog_list", "catalog_show", "catalog_render", "catalog_start", "group_list",
            "workflow_start", "workflow_status", "workflow_why", "workflow_logs"} <= set(tools)
    assert "cluster_id" in tools["workflow_validate"].input_schema["properties"]
    assert "every group of your own organization" in tools["group_list"].description


def test_workflow_validate_answers_the_servers_verdict_and_reason(stack, tmp_path):
    async def steps(session):
        return (await call(session, "workflow_validate", definition=VALID),
                await call(session, "workflow_validate", definition=FAR),
                await call(session, "workflow_validate", definition="version: v4\njobs: {a: {script: 1}}\n"))

    valid, far, broken = mcp(stack.url, stack.alice, tmp_path, steps)
    assert valid["valid"] is True and valid["checked_by"] == "server"
    assert far["valid"] is False and far["checked_by"] == "server"
    assert far["errors"] == [{"path": "volumes.data.reference", "message": far["errors"][0]["message"]}]
    assert "storage segment 'mars', which no node provides" in far["errors"][0]["message"]
    assert broken["valid"] is False and broken["errors"]


def test_workflow_validate_warns_when_the_server_cannot_be_asked(stack, tmp_path):
    async def steps(session):
        return await call(session, "workflow_validate", definition=VALID)

    unreachable = mcp("http://127.0.0.1:9", stack.alice, tmp_path, steps)
    assert unreachable["valid"] is True and unreachable["checked_by"] == "local"
    assert unreachable["warning"].startswith("the server could not be asked") and "127.0.0.1:9" in unreachable["warning"]

    async def elsewhere(session):
        return await call(session, "workflow_validate", definition=VALID, cluster_id="mars-cluster")

    other = mcp(stack.url, stack.alice, tmp_path, elsewhere)
    assert other["checked_by"] == "local" and "not 'mars-cluster'" in other["warning"]


def test_catalog_tools_list_what_can_be_read_and_name_the_source_that_cannot(stack, tmp_path):
    async def steps(session):
        return (await call(session, "catalog_list"), await call(session, "catalog_list", query="shell demo"),
                await call(session, "catalog_show", name="greeter"),
                await call(session, "catalog_render", name="apps/greeter", values={"Greeting": "hi", "Cores": 2}),
                await call(session, "catalog_render", name="greeter", values={"Cores": "many"}))

    listed, searched, shown, rendered, refused = mcp(stack.url, stack.alice, tmp_path, steps)
    assert [t["key"] for t in listed["templates"]] == ["apps/greeter"]
    assert len(listed["warnings"]) == 1 and "catalog source broken (cluster) could not be read" in listed["warnings"][0]
    assert [t["key"] for t in searched["templates"]] == ["apps/greeter"]
    assert [g["display_category"] for g in shown["groups"]] == ["Container", "Job", "Resources", "Secrets"]
    assert "echo hi" in rendered["fuzzfile"] and "cores: 2" in rendered["fuzzfile"]
    assert "values.Cores" in refused["error"]


def test_group_list_defaults_to_every_group_of_the_callers_organization(stack, tmp_path):
    async def steps(session):
        return await call(session, "group_list"), await call(session, "group_list", mine=True)

    every, mine = mcp(stack.url, stack.alice, tmp_path, steps)
    assert {g["name"]: g["member"] for g in every["groups"]} == {"lab": True, "ops": False}
    assert [g["name"] for g in mine["groups"]] == ["lab"] and mine["scope"] == "your groups"


def test_a_workflow_started_through_mcp_is_the_callers_and_its_status_why_and_logs_answer(stack, tmp_path):
    async def steps(session):
        started = await call(session, "catalog_start", name="greeter", values={"Greeting": "hi-from-catalog"},
                             workflow_name="via-mcp")
        direct = await call(session, "workflow_start", definition=VALID, name="direct")
        deadline, status = time.monotonic() + 90, {}
        while time.monotonic() < deadline:
            status = await call(session, "workflow_status", workflow_id=started["id"])
            if status["status"] in ("FINISHED", "FAILED", "CANCELED"):
                break
            await asyncio.sleep(0.5)
        why = await call(session, "workflow_why", workflow_id=started["id"], include_all=True)
        logs = await call(session, "workflow_logs", workflow_id=started["id"], stage="greet")
        missing = await call(session, "workflow_status", workflow_id="00000000-0000-0000-0000-000000000000")
        return started, direct, status, why, logs, missing

    started, direct, status, why, logs, missing = mcp(stack.url, stack.alice, tmp_path, steps)
    assert status["status"] == "FINISHED", status
    assert status["submitted_by"] == "alice" and status["name"] == "via-mcp" and direct["id"]
    assert [s["stage"] for s in why["stages"]] == ["greet"]
    assert "hi-from-catalog" in logs["log"]
    assert "not found" in missing["error"]

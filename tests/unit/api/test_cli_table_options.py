"""`-o wide` adds columns and `--no-headers` drops the header line, on every list command (squeue/kubectl habits)."""

import argparse
import json

import pytest

from api.cli.main import build_parser
from api.cli.output import render
from tests.unit.api.harness import JOB, PASSWORD, Api
from tests.unit.api.test_cli import run


@pytest.fixture(scope="module")
def api():
    return Api()


@pytest.fixture(scope="module")
def dana(api):
    """A member of widecorp/physics with one workflow waiting in the queue; returns her token."""
    org, token = api.organization_with_user("widecorp", "dana")
    group = api.request("POST", f"/v4/organizations/{org}/groups", api.admin, json={"name": "physics"}).json()["id"]
    user = api.request("GET", "/v4/auth/whoami", token).json()["user_id"]
    assert api.request("PUT", f"/v4/groups/{group}/members/{user}", api.admin, json={}).status_code == 200
    login = api.request("POST", "/v4/auth/login", json={"username": "dana", "password": PASSWORD})
    token = login.json()["token"]  # a fresh login's token carries the new group
    submitted = api.request("POST", "/v4/workflows", token, json={"name": "hello", "definition": JOB})
    assert submitted.status_code == 201, submitted.text
    return token


def leaves(parser):
    """Every command's own parser (`queue show`, `group list`, ...) with its name."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from list(leaves(child)) or [(name, child)]


def test_every_command_that_prints_tables_takes_wide_and_no_headers():
    commands = [p for _, p in leaves(build_parser()) if "--output" in p._option_string_actions]
    assert len(commands) > 40
    assert all("--no-headers" in p._option_string_actions for p in commands)
    assert all("wide" in p._option_string_actions["--output"].choices for p in commands)


def test_no_headers_drops_the_header_line_and_the_none_of_an_empty_list():
    rows = [{"name": "n1", "status": "up"}]
    assert render(rows, "table", ["name", "status"], headers=False) == "n1  up"
    assert render([], "table", ["name"], headers=False) == ""
    assert render([], "table", ["name"]) == "(none)"


def test_queue_show_without_headers_prints_only_rows(api, dana, capsys):
    code, out, _ = run(api, api.admin, ["queue", "show", "--no-headers"], capsys)
    assert code == 0 and out.strip() and not any(line.startswith("ID ") for line in out.splitlines())
    assert [line.split()[3] for line in out.splitlines() if " hello " in line] == ["dana"]


def test_queue_show_wide_adds_group_nodes_resources_queued_at_and_preemptible(api, dana, capsys):
    code, out, _ = run(api, api.admin, ["queue", "show", "-o", "wide"], capsys)
    header, *rows = out.splitlines()
    assert code == 0 and header.split()[-5:] == ["GROUP", "NODES", "RESOURCES", "QUEUED_AT", "PREEMPTIBLE"]
    mine = next(r for r in rows if " dana " in r)
    assert " physics " in mine and "memory_bytes=1073741824" in mine  # the group by name, the memory asked for


def test_wide_without_a_commands_own_columns_shows_every_field():
    rows = [{"name": "n1", "status": "up", "labels": {"gpu": "a100"}}]
    assert render(rows, "wide", ["name"]).splitlines()[0].split() == ["NAME", "STATUS", "LABELS"]


def test_wide_and_no_headers_together_and_json_stays_whole(api, dana, capsys):
    code, out, _ = run(api, dana, ["workflow", "list", "-o", "wide", "--no-headers"], capsys)
    assert code == 0 and len(out.splitlines()) == 1 and "physics" in out and "widecorp" in out
    code, out, _ = run(api, dana, ["workflow", "list", "-o", "json", "--no-headers"], capsys)
    assert json.loads(out)[0]["name"] == "hello"

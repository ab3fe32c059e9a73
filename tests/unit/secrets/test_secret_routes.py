"""`/v4/secrets` and `roving secret` over HTTP: 201 with an id, names and scopes only, 4xx naming the field."""

from __future__ import annotations

import io
import json

import httpx
import pytest

from api.cli.client import Client
from api.cli.main import execute
from tests.unit.secrets.harness import secret_parser, secrets_api

VALUE = "ghp_route-value-never-returned"


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    api = secrets_api(tmp_path_factory.mktemp("data"))
    api.acme, api.alice = api.organization_with_user("acme", "alice")
    api.globex, api.mallory = api.organization_with_user("globex", "mallory")
    return api


def test_a_created_secret_answers_201_with_an_id_and_never_comes_back(api):
    created = api.request("POST", "/v4/secrets", api.alice, json={"name": "hf", "value": VALUE, "scope": "user"})
    assert created.status_code == 201, created.text
    assert list(created.json()) == ["id"]
    listed = api.request("GET", "/v4/secrets", api.alice)
    assert [(s["id"], s["name"], s["scope"]) for s in listed.json()["secrets"]] == [(created.json()["id"], "hf", "user")]
    assert VALUE not in created.text + listed.text
    assert api.request("GET", "/v4/secrets", api.mallory).json() == {"secrets": []}
    assert api.request("DELETE", f"/v4/secrets/{created.json()['id']}", api.mallory).status_code == 404
    assert api.request("DELETE", f"/v4/secrets/{created.json()['id']}", api.alice).status_code == 200
    assert api.request("GET", "/v4/secrets", api.alice).json() == {"secrets": []}


@pytest.mark.parametrize(("body", "field"), [
    ({"name": "a/b", "value": VALUE}, "name"),
    ({"name": "ok", "value": ""}, "value"),
    ({"name": "ok", "value": "x" * (64 * 1024 + 1)}, "value"),
    ({"name": "ok", "value": VALUE, "scope": "galaxy"}, "scope"),
    ({"name": "ok", "value": 7}, "value"),
    ({"name": "ok"}, "body"),
])
def test_bad_input_is_a_400_naming_the_field_never_the_value(api, body, field):
    answer = api.request("POST", "/v4/secrets", api.alice, json=body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["errors"][0]["path"] == field
    assert VALUE not in answer.text


def test_an_organization_secret_needs_an_organization_owner(api):
    answer = api.request("POST", "/v4/secrets", api.alice, json={"name": "o", "value": VALUE, "scope": "organization"})
    assert answer.status_code == 403


def test_a_delete_of_something_that_is_not_an_id_is_not_found(api):
    assert api.request("DELETE", "/v4/secrets/not-an-id", api.alice).status_code == 404


def client_for(api, bearer):
    def handle(request: httpx.Request) -> httpx.Response:
        answer = api.request(request.method, str(request.url), bearer, content=request.content,
                             headers={"Content-Type": request.headers.get("content-type", "application/json")})
        return httpx.Response(answer.status_code, headers=answer.headers, content=answer.content)
    return Client("http://roving.test", transport=httpx.MockTransport(handle))


def cli(api, argv, capsys, monkeypatch, stdin=""):
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code = execute(secret_parser().parse_args(argv), client_for(api, api.alice))
    captured = capsys.readouterr()
    return code, "".join(line for line in captured.out.splitlines(True) if " request " not in line), captured.err


def test_the_cli_creates_from_stdin_lists_as_json_and_deletes_by_name(api, capsys, monkeypatch, tmp_path):
    code, out, _ = cli(api, ["secret", "create", "from-stdin", "-o", "json"], capsys, monkeypatch, stdin=VALUE + "\n")
    assert code == 0 and "id" in json.loads(out)
    (tmp_path / "v").write_text(VALUE)
    assert cli(api, ["secret", "create", "from-file", "--from-file", str(tmp_path / "v")], capsys, monkeypatch)[0] == 0
    code, out, _ = cli(api, ["secret", "list", "-o", "json"], capsys, monkeypatch)
    assert sorted(r["name"] for r in json.loads(out)) == ["from-file", "from-stdin"] and VALUE not in out
    assert cli(api, ["secret", "delete", "from-stdin"], capsys, monkeypatch)[0] == 0
    assert cli(api, ["secret", "delete", "from-file"], capsys, monkeypatch)[0] == 0
    assert json.loads(cli(api, ["secret", "list", "-o", "json"], capsys, monkeypatch)[1]) == []


def test_the_cli_refuses_an_empty_value_with_exit_2_naming_it(api, capsys, monkeypatch):
    code, _, err = cli(api, ["secret", "create", "empty"], capsys, monkeypatch, stdin="")
    assert (code, "value" in err) == (2, True)


def test_the_cli_refuses_a_bad_name_with_exit_2_naming_it(api, capsys, monkeypatch):
    code, _, err = cli(api, ["secret", "create", "bad name", "--value", VALUE], capsys, monkeypatch)
    assert code == 2 and "name" in err and VALUE not in err


def test_the_cli_says_what_the_server_refused_with_exit_1(api, capsys, monkeypatch):
    code, _, err = cli(api, ["secret", "create", "o", "--scope", "organization", "--value", VALUE], capsys, monkeypatch)
    assert code == 1 and "organization's owners" in err and VALUE not in err


def test_a_cluster_admin_rotates_the_key_and_nobody_else_may(api):
    api.request("POST", "/v4/secrets", api.alice, json={"name": "before-rotation", "value": VALUE})
    assert api.request("POST", "/v4/secrets/-/rotate-key", api.alice).status_code == 403
    rotated = api.request("POST", "/v4/secrets/-/rotate-key", api.admin)
    assert rotated.status_code == 200 and rotated.json()["resealed"] >= 1 and VALUE not in rotated.text

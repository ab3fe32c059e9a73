"""`/v4/profiles` and `roving profile` over HTTP: admins set and delete, users read, 400 naming the field."""

from __future__ import annotations

import json

import httpx
import pytest

from api.cli.client import Client
from api.cli.main import build_parser, execute
from tests.unit.api.harness import Api

BODY = {"env": {"OMP_NUM_THREADS": "8"}, "resource": {"cpu": {"cores": 2}}, "annotations": {"site": "a"},
        "pre": "echo warm", "post": "echo done", "hook_timeout": "30s"}


@pytest.fixture(scope="module")
def api():
    api = Api()
    api.acme, api.alice = api.organization_with_user("acme", "alice")
    return api


def test_an_admin_puts_a_profile_and_a_user_reads_it_back_with_every_field(api):
    put = api.request("PUT", "/v4/profiles/omp", api.admin, json=BODY)
    assert put.status_code == 200, put.text
    got = api.request("GET", "/v4/profiles/omp", api.alice).json()
    assert {k: got[k] for k in BODY} == BODY and got["revision"] == 1
    assert "omp" in [p["name"] for p in api.request("GET", "/v4/profiles", api.alice).json()["profiles"]]
    assert api.request("PUT", "/v4/profiles/omp", api.alice, json=BODY).status_code == 403
    assert api.request("DELETE", "/v4/profiles/omp", api.admin).json()["deleted"] is True
    assert api.request("GET", "/v4/profiles/omp", api.alice).status_code == 404


@pytest.mark.parametrize(("body", "field"), [
    ({"env": {"GITHUB_TOKEN": "x"}}, "env.GITHUB_TOKEN"),
    ({"hook_timeout": "soon"}, "hook_timeout"),
    ({"resource": {"cpu": {"corez": 2}}}, "resource.cpu"),
    ({"envs": {}}, "envs"),
])
def test_a_bad_body_is_a_400_naming_the_field(api, body, field):
    answer = api.request("PUT", "/v4/profiles/bad", api.admin, json=body)
    assert answer.status_code == 400, answer.text
    assert field in answer.json()["errors"][0]["path"] + answer.json()["error"]


def test_a_bad_name_is_a_400_naming_it(api):
    answer = api.request("PUT", "/v4/profiles/Not_A_Name", api.admin, json=BODY)
    assert (answer.status_code, answer.json()["errors"][0]["path"]) == (400, "name")


def client_for(api, bearer):
    def handle(request: httpx.Request) -> httpx.Response:
        answer = api.request(request.method, str(request.url), bearer, content=request.content,
                             headers={"Content-Type": request.headers.get("content-type", "application/json")})
        return httpx.Response(answer.status_code, headers=answer.headers, content=answer.content)
    return Client("http://roving.test", transport=httpx.MockTransport(handle))


def cli(api, bearer, argv, capsys):
    code = execute(build_parser().parse_args(argv), client_for(api, bearer))
    captured = capsys.readouterr()
    return code, "".join(line for line in captured.out.splitlines(True) if " request " not in line), captured.err


def test_the_cli_sets_from_a_file_and_options_gets_lists_and_deletes(api, capsys, tmp_path):
    (tmp_path / "p.yaml").write_text("env: {A: '1'}\nresource: {memory: {size: 1GiB}}\n")
    (tmp_path / "post.sh").write_text("echo bye\n")
    code, out, _ = cli(api, api.admin, ["profile", "set", "cli", "-f", str(tmp_path / "p.yaml"), "--env", "B=2",
                                        "--device", "nvidia.com/gpu=0", "--post-file", str(tmp_path / "post.sh"),
                                        "-o", "json"], capsys)
    assert code == 0
    shown = json.loads(cli(api, api.alice, ["profile", "get", "cli", "-o", "json"], capsys)[1])
    assert (shown["env"], shown["resource"], shown["post"]) == (
        {"A": "1", "B": "2"}, {"memory": {"size": "1GiB"}, "devices": {"nvidia.com/gpu": 0}}, "echo bye\n")
    assert "cli" in [p["name"] for p in json.loads(cli(api, api.alice, ["profile", "list", "-o", "json"], capsys)[1])]
    assert cli(api, api.alice, ["profile", "delete", "cli"], capsys)[0] == 1  # not an admin: the server refuses
    assert cli(api, api.admin, ["profile", "delete", "cli"], capsys)[0] == 0


def test_the_cli_refuses_a_malformed_pair_with_exit_2_naming_the_option(api, capsys):
    code, _, err = cli(api, api.admin, ["profile", "set", "x", "--env", "NOEQUALS"], capsys)
    assert code == 2 and "--env" in err

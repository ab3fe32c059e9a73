"""CLI habits Slurm and Fuzzball users bring: `queue show --owner` takes a user's name or a group's ORG/NAME,
`--watch` shows the queue again until Ctrl-C, and `endpoint create --owner` takes names too."""

import json

import httpx
import pytest

from api.cli.client import Client
from api.cli.main import build_parser, execute
from domain.ids import group_id, org_id
from tests.unit.api.harness import JOB, Api
from tests.unit.api.test_cli import run


@pytest.fixture(scope="module")
def api():
    return Api()


@pytest.fixture(scope="module")
def two_users(api, tmp_path_factory):
    fuzzfile = tmp_path_factory.mktemp("q") / "hello.yaml"
    fuzzfile.write_text(JOB)
    _, grace = api.organization_with_user("owners", "grace")
    _, heidi = api.organization_with_user("owners2", "heidi")
    return fuzzfile, grace, heidi


def test_queue_show_owner_takes_a_user_name(api, two_users, capsys):
    fuzzfile, grace, heidi = two_users
    for token in (grace, heidi):
        assert run(api, token, ["workflow", "start", str(fuzzfile), "-o", "json"], capsys)[0] == 0
    code, out, err = run(api, api.admin, ["queue", "show", "--owner", "grace", "-o", "json"], capsys)
    assert code == 0, err
    rows = json.loads(out)
    assert rows and {row["user"] for row in rows} == {"grace"}


def test_queue_show_watch_shows_the_queue_again_until_ctrl_c(api, two_users, capsys, monkeypatch):
    shown = []

    def sleep(seconds):
        shown.append(seconds)
        if len(shown) == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr("api.cli.queue.time.sleep", sleep)
    code, out, _ = run(api, api.admin, ["queue", "show", "--watch", "0.5"], capsys)
    assert code == 0 and shown == [0.5, 0.5, 0.5]
    assert [line.split()[0] for line in out.splitlines() if line.startswith("ID ")] == ["ID"] * 3


@pytest.mark.parametrize(("kind", "owner", "expected"), [
    ("group", "lab/gpu", str(group_id(org_id("lab"), "gpu"))),
    ("organization", "lab", str(org_id("lab"))),
    ("group", str(group_id(org_id("lab"), "gpu")), str(group_id(org_id("lab"), "gpu"))),
])
def test_endpoint_create_owner_takes_names(kind, owner, expected, capsys):
    sent = []

    def answer(request):
        sent.append(json.loads(request.content))
        return httpx.Response(201, json={"id": "e1", "name": "web"})

    client = Client("http://roving.test", transport=httpx.MockTransport(answer))
    args = build_parser().parse_args(["endpoint", "create", "web", "--scope", kind, "--owner-kind", kind,
                                      "--owner", owner])
    assert execute(args, client) == 0
    assert sent[0]["owner_id"] == expected


def test_endpoint_create_with_a_group_owner_but_no_org_is_bad_usage(capsys):
    client = Client("http://roving.test", transport=httpx.MockTransport(lambda r: httpx.Response(500)))
    args = build_parser().parse_args(["endpoint", "create", "web", "--owner-kind", "group", "--owner", "gpu"])
    assert execute(args, client) == 2
    assert "ORG/NAME" in capsys.readouterr().err


def test_audit_list_organization_takes_a_name(capsys):
    asked = []

    def answer(request):
        asked.append(dict(request.url.params))
        return httpx.Response(200, json={"rows": []})

    client = Client("http://roving.test", transport=httpx.MockTransport(answer))
    assert execute(build_parser().parse_args(["audit", "list", "--organization", "lab"]), client) == 0
    assert asked[0]["organization"] == str(org_id("lab"))

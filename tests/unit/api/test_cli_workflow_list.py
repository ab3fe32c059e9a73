"""`roving workflow list` lists newest first, pages through the API's cursor, filters as `sacct -u -S -E` does
(user by name, state, time), and `--watch` prints the list again until interrupted."""

import json

import pytest

from api.cli import workflow as cli_workflow
from api.cli.main import build_parser
from tests.unit.api.harness import JOB, Api
from tests.unit.api.test_cli import run
from tests.unit.api.test_workflow_list_pages import member


@pytest.fixture(scope="module")
def api():
    return Api()


@pytest.fixture(scope="module")
def tokens(api):
    org_id, erin = api.organization_with_user("listcorp", "erin")
    return erin, member(api, org_id, "fay", "org_owner")


@pytest.fixture(scope="module")
def submitted(api, tokens):
    erin, fay = tokens
    ids = [api.request("POST", "/v4/workflows", erin, json={"name": f"run-{n}", "definition": JOB}).json()["id"]
           for n in range(5)]
    theirs = api.request("POST", "/v4/workflows", fay, json={"name": "fays", "definition": JOB}).json()["id"]
    return ids, theirs


def listed(api, token, capsys, *options):
    code, out, err = run(api, token, ["workflow", "list", "-o", "json", *options], capsys)
    assert code == 0, err
    return [r["id"] for r in json.loads(out)]


def test_the_list_is_newest_first_and_pages_through_every_workflow(api, tokens, submitted, capsys, monkeypatch):
    monkeypatch.setattr(cli_workflow, "LIST_PAGE", 2)  # five of erin's, two to a request
    ids, _ = submitted
    assert listed(api, tokens[0], capsys, "--limit", "0") == list(reversed(ids))


def test_limit_prints_the_newest_n(api, tokens, submitted, capsys, monkeypatch):
    monkeypatch.setattr(cli_workflow, "LIST_PAGE", 2)
    ids, _ = submitted
    assert listed(api, tokens[0], capsys, "--limit", "3") == list(reversed(ids))[:3]


def test_user_takes_a_name_and_state_and_time_filter(api, tokens, submitted, capsys):
    ids, theirs = submitted
    assert listed(api, tokens[1], capsys, "-u", "fay") == [theirs]
    assert listed(api, tokens[1], capsys, "--owner", "erin", "--state", "PENDING") == list(reversed(ids))
    assert listed(api, tokens[1], capsys, "-u", "erin", "-S", "1h", "--name", "run-4") == [ids[4]]
    assert listed(api, tokens[1], capsys, "-u", "erin", "-E", "2000-01-01") == []


@pytest.mark.parametrize("option, value", [("--since", "last tuesday"), ("-E", "31/01/2026"), ("--limit", "-5")])
def test_a_bad_time_or_limit_is_a_usage_error_naming_the_option(capsys, option, value):
    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args(["workflow", "list", option, value])
    assert stopped.value.code == 2 and option in capsys.readouterr().err


def test_watch_prints_the_list_again_until_interrupted(api, tokens, submitted, capsys, monkeypatch):
    rounds = []

    def sleep(seconds):
        rounds.append(seconds)
        if len(rounds) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(cli_workflow.time, "sleep", sleep)
    code, out, _ = run(api, tokens[0], ["workflow", "list", "--watch", "--name", "run-0"], capsys)
    assert code == 0 and out.count("every 2s: roving workflow list") == 2 and out.count("run-0") == 2


def test_watch_with_json_prints_only_json_documents(api, tokens, submitted, capsys, monkeypatch):
    def sleep(seconds):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_workflow.time, "sleep", sleep)
    code, out, _ = run(api, tokens[0], ["workflow", "list", "--watch", "-o", "json", "--name", "run-0"], capsys)
    assert code == 0 and [r["name"] for r in json.loads(out)] == ["run-0"]

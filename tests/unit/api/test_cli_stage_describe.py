"""`roving workflow describe ID` counts attempts made (0 for a stage that never ran), and `describe ID STAGE`
shows one stage in full: its fields, its resources and its own events."""

import json

import pytest

from tests.unit.api.harness import JOB, Api
from tests.unit.api.test_cli import run


@pytest.fixture(scope="module")
def api():
    return Api()


@pytest.fixture(scope="module")
def workflow(api):
    _, owner = api.organization_with_user("describing", "fran")
    answer = api.request("POST", "/v4/workflows", owner, json={"definition": JOB})
    assert answer.status_code == 201, answer.text
    return owner, answer.json()["id"]


def test_a_stage_that_never_ran_shows_attempts_0(api, workflow, capsys):
    owner, wid = workflow
    code, out, _ = run(api, owner, ["workflow", "describe", wid], capsys)
    header, row = [line.split() for line in out.splitlines()[-2:]]
    assert code == 0 and row[header.index("ATTEMPTS")] == "0"


def test_describe_a_stage_shows_its_status_resources_and_its_events(api, workflow, capsys):
    owner, wid = workflow
    code, out, err = run(api, owner, ["workflow", "describe", wid, "hello"], capsys)
    assert code == 0, err
    assert "stage: hello" in out and "status: READY" in out and "attempts: 0" in out
    assert "resources: cpu 1, memory 1 GiB" in out
    assert "Queued for scheduling" in out and "Submitted by" not in out  # the workflow's own events are not its
    code, out, _ = run(api, owner, ["workflow", "describe", wid, "hello", "-o", "json"], capsys)
    found = json.loads(out)
    assert (found["name"], found["attempts_made"], found["resources"]["memory_bytes"]) == ("hello", 0, 2**30)
    assert {e["stage"] for e in found["events"]} == {"hello"}


def test_describe_an_unknown_stage_names_the_stages_there_are(api, workflow, capsys):
    owner, wid = workflow
    with pytest.raises(SystemExit) as exit:
        run(api, owner, ["workflow", "describe", wid, "nope"], capsys)
    assert exit.value.code == 2 and "its stages: hello" in capsys.readouterr().err

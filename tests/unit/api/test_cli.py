"""The CLI parses what the docs promise, prints tables, JSON or YAML, and exits 0, 1 or 2 as promised."""

import json
import os
import subprocess
import sys

import httpx
import pytest
import yaml

from api.cli.client import ApiError, Client, current_context, message_of
from api.cli.main import build_parser, execute, main
from api.cli.output import render, table
from domain.tenancy import Role, Source
from tests.unit.api.harness import JOB, Api, token


@pytest.fixture(scope="module")
def api():
    return Api()


def client_for(api, bearer):
    """A CLI client whose requests go to the in-process API."""
    def handle(request: httpx.Request) -> httpx.Response:
        answer = api.request(request.method, str(request.url), bearer, content=request.content,
                             headers={"Content-Type": request.headers.get("content-type", "application/json")})
        return httpx.Response(answer.status_code, headers=answer.headers, content=answer.content)
    return Client("http://roving.test", transport=httpx.MockTransport(handle))


def run(api, bearer, argv, capsys):
    """Exit code, the command's own output (the API's access log lines left out), and its errors."""
    code = execute(build_parser().parse_args(argv), client_for(api, bearer))
    captured = capsys.readouterr()
    out = "".join(line for line in captured.out.splitlines(True) if " request " not in line)
    return code, out, captured.err


def test_a_table_has_an_upper_case_header_and_aligned_cells():
    assert table([{"name": "n1", "holds": []}, {"name": "node-2", "holds": ["cordon"]}]).splitlines() == [
        "NAME    HOLDS", "n1      -", "node-2  cordon"]


def test_json_and_yaml_show_the_whole_answer():
    value = [{"id": "a", "stages": [{"name": "s"}]}]
    assert json.loads(render(value, "json")) == value
    assert yaml.safe_load(render(value, "yaml")) == value


def test_bad_usage_exits_2(capsys):
    with pytest.raises(SystemExit) as exit:
        main(["workflow", "start"])
    assert exit.value.code == 2
    with pytest.raises(SystemExit) as exit:
        main(["queue", "show", "-o", "xml"])
    assert exit.value.code == 2


def test_every_command_explains_itself_with_help(capsys):
    with pytest.raises(SystemExit) as exit:
        main(["group", "update", "--help"])
    assert exit.value.code == 0 and "--no-preempt" in capsys.readouterr().out


def test_workflow_start_sends_the_endpoint_takeover_strategy_and_refuses_others(capsys, tmp_path):
    sent = []

    def handle(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        return httpx.Response(201, json={"id": "w1", "warnings": []})

    (tmp_path / "llm.yaml").write_text(JOB)
    args = build_parser().parse_args(["workflow", "start", str(tmp_path / "llm.yaml"), "--strategy", "start"])
    assert execute(args, Client("http://roving.test", transport=httpx.MockTransport(handle))) == 0
    assert sent[0]["endpoint_strategy"] == "start"
    with pytest.raises(SystemExit) as exit:
        main(["workflow", "start", "f.yaml", "--strategy", "sideways"])
    assert exit.value.code == 2 and "ready" in capsys.readouterr().err


def test_the_environment_overrides_the_context_file(tmp_path):
    found = current_context({"ROVING_API": "http://x:1", "ROVING_TOKEN": "t"}, tmp_path / "none.yaml")
    assert found == {"api": "http://x:1", "token": "t", "refresh_token": ""}  # a token given by hand: no refresh


def test_a_server_refusal_prints_its_message():
    response = httpx.Response(400, json={"errors": [{"path": "priority", "message": "must be 0 or lower"}]})
    assert message_of(response) == "priority: must be 0 or lower"


def test_start_then_list_and_describe_a_workflow(api, capsys, tmp_path):
    _, alice = api.organization_with_user("acme", "alice")
    fuzzfile = tmp_path / "hello.yaml"
    fuzzfile.write_text(JOB)
    code, out, _ = run(api, alice, ["workflow", "start", str(fuzzfile), "-o", "json"], capsys)
    assert code == 0
    workflow_id = json.loads(out)["id"]
    code, out, _ = run(api, alice, ["workflow", "list"], capsys)
    assert code == 0 and out.splitlines()[0].split()[:3] == ["ID", "NAME", "STATUS"] and workflow_id in out
    code, out, _ = run(api, alice, ["workflow", "describe", workflow_id, "-o", "yaml"], capsys)
    assert yaml.safe_load(out)["stages"][0]["name"] == "hello"


def test_a_server_refusal_exits_1_with_its_message(api, capsys):
    _, user = api.organization_with_user("evil", "mallory")
    code, _, err = run(api, user, ["org", "create", "initech"], capsys)
    assert code == 1 and "HTTP 403" in err and "cluster admin" in err


def test_validate_reports_errors_locally_and_exits_1(capsys, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: v4\njobs: {a: {}}\n")
    assert execute(build_parser().parse_args(["workflow", "validate", str(bad)]), client=object()) == 1
    assert "error:" in capsys.readouterr().err


def test_a_missing_process_module_is_a_clear_error_not_a_traceback(capsys, monkeypatch):
    import importlib

    gone = ("api.no_such_module", "federate_main", "gone")
    monkeypatch.setitem(importlib.import_module("api.cli.main").PROCESSES, "federate", gone)
    assert main(["federate"]) == 1
    assert "not available" in capsys.readouterr().err


def test_node_list_shows_memory_for_people_and_exact_bytes_for_scripts(api, capsys):
    agent = token("agent", Role.USER, source=Source.AGENT)
    node = {"name": "big-1", "cpu": 64, "memory": 1536 * 2**30, "address": "10.0.0.9"}
    assert api.request("POST", "/v4/agent/register", agent, json=node).status_code == 200
    _, out, _ = run(api, api.admin, ["node", "list"], capsys)
    assert out.splitlines()[1].split()[4] == "1.5TiB"
    _, out, _ = run(api, api.admin, ["node", "list", "-o", "json"], capsys)
    assert json.loads(out)[0]["memory"] == 1536 * 2**30


def test_node_events_prints_the_nodes_story_newest_first(api, capsys):
    agent = token("agent", Role.USER, source=Source.AGENT)
    api.request("POST", "/v4/agent/register", agent, json={"name": "told-1", "cpu": 2, "memory": 2**31})
    api.request("POST", "/v4/nodes/told-1/cordon", api.admin, json={"reason": "fan noise"})
    code, out, _ = run(api, api.admin, ["node", "events", "told-1"], capsys)
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["AT", "TYPE", "BY", "MESSAGE", "ALLOCATION"]
    assert "HoldPlaced" in lines[1] and "cordon hold placed (admin): fan noise" in lines[1]
    assert "registered as told-1" in lines[-1]
    code, _, err = run(api, api.admin, ["node", "events", "no-such-node"], capsys)
    assert code == 1 and "node" in err


def test_output_cut_short_by_its_reader_ends_quietly():
    env = {**os.environ, "ROVING_API": "http://127.0.0.1:1", "ROVING_TOKEN": "t"}
    started = "import sys, time; time.sleep(0.3); from api.cli.main import main; sys.exit(main())"  # after close
    cli = subprocess.Popen([sys.executable, "-c", started, "context", "show"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    cli.stdout.close()  # like `| head`: nobody reads
    _, err = cli.communicate(timeout=30)
    assert (cli.returncode, err.decode()) == (0, "")


def test_group_explainer_grants_and_revokes_explain_allocation(api, capsys):
    org, _ = api.organization_with_user("initrode", "milton")
    assert run(api, api.admin, ["group", "create", org, "staplers"], capsys)[0] == 0
    code, out, _ = run(api, api.admin, ["group", "explainer", f"{org}/staplers", "milton", "-o", "json"], capsys)
    assert code == 0 and json.loads(out)["explain_allocation"] is True
    code, out, _ = run(api, api.admin, ["group", "explainer", f"{org}/staplers", "milton", "--revoke", "-o", "json"],
                       capsys)
    assert code == 0 and json.loads(out)["explain_allocation"] is False
    code, _, err = run(api, api.admin, ["group", "explainer", f"{org}/staplers", "milton", "--revoke"], capsys)
    assert code == 1 and "does not hold it" in err


def test_queue_show_names_the_user_and_says_how_long_and_why_like_squeue(api, capsys, tmp_path):
    _, carol = api.organization_with_user("queue-cols", "carol")
    fuzzfile = tmp_path / "hello.yaml"
    fuzzfile.write_text(JOB)
    assert run(api, carol, ["workflow", "start", str(fuzzfile), "-o", "json"], capsys)[0] == 0
    code, out, _ = run(api, api.admin, ["queue", "show"], capsys)
    header, *rows = out.splitlines()
    assert code == 0 and header.split() == ["ID", "WORKFLOW_ID", "STAGE", "USER", "STATE", "PRIORITY", "WEIGHT",
                                            "ELAPSED", "NODE", "REASON"]
    mine = [r.split() for r in rows if " carol " in r]
    assert mine and mine[0][3] == "carol" and mine[0][7].count(":") == 2  # HH:MM:SS waited so far
    code, out, _ = run(api, api.admin, ["queue", "show", "-o", "json"], capsys)
    assert {"user", "user_id", "reason"} <= set(json.loads(out)[0])


def test_a_command_without_a_token_says_to_log_in(capsys):
    refused = httpx.MockTransport(lambda request: httpx.Response(401, json={"error": "missing bearer token"}))
    with Client("http://roving.test", transport=refused) as client, pytest.raises(ApiError) as error:
        client.get("/v4/workflows")
    assert "run `roving context login USERNAME --api http://roving.test`" in str(error.value)
    assert "Authorization" not in str(error.value)


def test_workflow_log_explains_its_positionals(capsys):
    with pytest.raises(SystemExit):
        main(["workflow", "log", "--help"])
    out = capsys.readouterr().out
    assert "the workflow's id" in out and "NAME[INDEX]" in out


def test_workflow_log_with_o_json_prints_one_json_document_for_scripts(api, capsys):
    wid = api.request("POST", "/v4/workflows", api.admin, json={"name": "w", "definition": JOB}).json()["id"]
    api.services.logs.lines[(wid, "hello")] = b"line one\nline two\n"
    code, out, _ = run(api, api.admin, ["workflow", "log", wid, "hello", "-o", "json"], capsys)
    assert code == 0
    assert json.loads(out) == {"workflow_id": wid, "stage": "hello", "output": "line one\nline two\n"}
    code, out, _ = run(api, api.admin, ["workflow", "log", wid, "hello"], capsys)
    assert out == "line one\nline two\n"


def test_a_workflow_is_described_and_stopped_by_the_first_characters_of_its_id(api, capsys, tmp_path):
    _, carol = api.organization_with_user("shortids", "shortid-user")
    fuzzfile = tmp_path / "hello.yaml"
    fuzzfile.write_text(JOB)
    code, out, _ = run(api, carol, ["workflow", "start", str(fuzzfile), "-o", "json"], capsys)
    workflow_id = json.loads(out)["id"]
    code, out, err = run(api, carol, ["workflow", "describe", workflow_id[:8], "-o", "json"], capsys)
    assert code == 0, err
    assert json.loads(out)["id"] == workflow_id
    code, out, err = run(api, carol, ["workflow", "stop", workflow_id[:8].upper(), "-o", "json"], capsys)
    assert code == 0 and json.loads(out)["id"] == workflow_id


class PagedList:
    """The CLI client's get(), answering /v4/workflows in pages of two with a `next` cursor."""

    def __init__(self, ids):
        self.pages = [ids[i:i + 2] for i in range(0, len(ids), 2)]

    def get(self, path, **params):
        page = int(params.get("next") or 0)
        more = page + 1 < len(self.pages)
        return {"workflows": [{"id": i} for i in self.pages[page]], "next": str(page + 1) if more else None}


def test_a_short_id_is_matched_across_every_page_and_ambiguity_names_the_candidates():
    from api.cli.short_ids import ShortIdError, workflow_id

    ids = ["0b1e7d2a-0000-4000-8000-000000000001", "5a5a0000-0000-4000-8000-000000000002",
           "abcd1234-0000-4000-8000-000000000003", "abcd9999-0000-4000-8000-000000000004",
           "f00d0000-0000-4000-8000-000000000005"]
    assert workflow_id(PagedList(ids), "f00d") == ids[4]  # on the last page
    with pytest.raises(ShortIdError, match="'abcd' starts 2 workflow ids .*abcd1234.*abcd9999.*give more"):
        workflow_id(PagedList(ids), "abcd")


def test_a_short_id_of_another_tenants_workflow_is_bad_usage_that_reveals_nothing(api, capsys, tmp_path):
    _, erin = api.organization_with_user("tenant-a", "short-erin")
    _, frank = api.organization_with_user("tenant-b", "short-frank")
    fuzzfile = tmp_path / "hello.yaml"
    fuzzfile.write_text(JOB)
    erins = json.loads(run(api, erin, ["workflow", "start", str(fuzzfile), "-o", "json"], capsys)[1])["id"]
    code, _, err = run(api, frank, ["workflow", "describe", erins[:8]], capsys)
    assert code == 2 and "no workflow you can see" in err and erins not in err
    code, _, err = run(api, frank, ["workflow", "describe", "zz"], capsys)
    assert code == 2 and "not a workflow id" in err and "Traceback" not in err

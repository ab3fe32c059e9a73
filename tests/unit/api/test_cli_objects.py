"""`roving object`: what a user sees putting, getting and listing files (the API in process, objects in memory)."""

from __future__ import annotations

import json

import httpx
import pytest

from api.cli.client import Client
from api.cli.main import build_parser, execute
from tests.unit.api.harness import Api


@pytest.fixture(scope="module")
def api():
    return Api()


@pytest.fixture(scope="module")
def alice(api):
    return api.organization_with_user("acme", "alice")[1]


def client_for(api, bearer):
    def handle(request: httpx.Request) -> httpx.Response:
        answer = api.request(request.method, str(request.url), bearer, content=request.read(),
                             headers={k: v for k, v in request.headers.items() if k in ("content-type",)})
        return httpx.Response(answer.status_code, headers=answer.headers, content=answer.content)
    return Client("http://roving.test", transport=httpx.MockTransport(handle))


def run(api, bearer, argv, capsys):
    with client_for(api, bearer) as client:
        code = execute(build_parser().parse_args(argv), client)
    captured = capsys.readouterr()
    out = "".join(line for line in captured.out.splitlines(True) if " request " not in line)
    return code, out, captured.err


def test_put_into_a_folder_names_the_object_after_the_file_and_get_writes_it_back(api, alice, capsys, tmp_path):
    (tmp_path / "data.csv").write_bytes(b"a,b\n1,2\n")
    code, out, _ = run(api, alice, ["object", "put", str(tmp_path / "data.csv"), "inputs/", "-o", "json"], capsys)
    assert code == 0 and json.loads(out)["object"] == "object://user/inputs/data.csv"
    assert json.loads(out)["result"] == "created"
    (tmp_path / "back").mkdir()
    code, out, _ = run(api, alice, ["object", "get", "object://user/inputs/data.csv", str(tmp_path / "back")], capsys)
    assert code == 0 and (tmp_path / "back" / "data.csv").read_bytes() == b"a,b\n1,2\n"
    assert not list((tmp_path / "back").glob(".*part"))


def test_putting_the_same_file_again_is_a_quiet_success_and_other_content_needs_force(api, alice, capsys, tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("v1")
    assert run(api, alice, ["object", "put", str(path), "notes.txt"], capsys)[0] == 0
    code, out, _ = run(api, alice, ["object", "put", str(path), "notes.txt", "-o", "json"], capsys)
    assert code == 0 and json.loads(out)["result"] == "unchanged"
    path.write_text("v2")
    code, _, err = run(api, alice, ["object", "put", str(path), "notes.txt"], capsys)
    assert code == 1 and "already exists with different content; put it with --force" in err
    code, out, _ = run(api, alice, ["object", "put", str(path), "notes.txt", "--force", "-o", "json"], capsys)
    assert code == 0 and json.loads(out)["result"] == "replaced"


def test_get_refuses_to_overwrite_a_different_local_file_without_force(api, alice, capsys, tmp_path):
    (tmp_path / "src").write_text("remote")
    run(api, alice, ["object", "put", str(tmp_path / "src"), "keep.txt"], capsys)
    (tmp_path / "keep.txt").write_text("local edits")
    code, _, err = run(api, alice, ["object", "get", "keep.txt", str(tmp_path / "keep.txt")], capsys)
    assert code == 1 and "--force" in err and (tmp_path / "keep.txt").read_text() == "local edits"
    assert run(api, alice, ["object", "get", "keep.txt", str(tmp_path / "keep.txt"), "--force"], capsys)[0] == 0
    assert (tmp_path / "keep.txt").read_text() == "remote"


def test_list_pages_and_stops_at_max_pages_saying_more_follow(api, alice, capsys, tmp_path):
    for index in range(5):
        (tmp_path / f"f{index}").write_text(str(index))
        run(api, alice, ["object", "put", str(tmp_path / f"f{index}"), "pages/"], capsys)
    code, out, _ = run(api, alice, ["object", "list", "pages/", "-p", "2", "-o", "json"], capsys)
    assert code == 0 and [o["name"] for o in json.loads(out)] == [f"pages/f{i}" for i in range(5)]
    code, out, err = run(api, alice, ["object", "list", "pages/", "--page-size", "2", "--max-pages", "1",
                                      "-o", "json"], capsys)
    assert [o["name"] for o in json.loads(out)] == ["pages/f0", "pages/f1"] and "more objects follow" in err
    code, out, _ = run(api, alice, ["object", "list", "pages/"], capsys)
    assert out.splitlines()[0].split() == ["OBJECT", "SIZE", "MODIFIED", "UPLOADED_BY"]


@pytest.mark.parametrize("argv, message", [
    (["object", "put", "/nonexistent/file", "x"], "SRC: /nonexistent/file is not a file"),
    (["object", "put", "-", "folder/"], "DEST: object://user/folder/ is a folder"),
    (["object", "put", "-", "s3://b/k"], "DEST: 's3://b/k': expected object://user/PATH"),
    (["object", "get", "runs/", "."], "SRC: object://user/runs/ is a folder"),
    (["object", "list", "-p", "0"], "--page-size: expected 1 to 1000"),
    (["object", "delete", "a//b"], "LOCATION: 'a//b' has an empty part"),
])
def test_bad_usage_exits_2_naming_the_argument(api, alice, capsys, argv, message):
    code, _, err = run(api, alice, argv, capsys)
    assert code == 2 and message in err


def test_delete_removes_the_object_and_a_second_delete_is_not_found(api, alice, capsys, tmp_path):
    (tmp_path / "gone").write_text("x")
    run(api, alice, ["object", "put", str(tmp_path / "gone"), "gone"], capsys)
    assert run(api, alice, ["object", "delete", "gone"], capsys)[0] == 0
    code, _, err = run(api, alice, ["object", "delete", "gone"], capsys)
    assert code == 1 and "object object://user/gone not found" in err


def test_put_from_standard_input_streams_it_under_the_name_given(api, alice, capsys, monkeypatch, tmp_path):
    import io
    import sys
    stdin = io.TextIOWrapper(io.BytesIO(b"piped bytes\n"))
    monkeypatch.setattr(sys, "stdin", stdin)
    code, out, _ = run(api, alice, ["object", "put", "-", "logs/piped.txt", "-o", "json"], capsys)
    assert code == 0 and json.loads(out)["object"] == "object://user/logs/piped.txt"
    code, _, _ = run(api, alice, ["object", "get", "logs/piped.txt", str(tmp_path / "piped.txt")], capsys)
    assert (tmp_path / "piped.txt").read_bytes() == b"piped bytes\n"

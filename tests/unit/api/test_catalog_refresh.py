"""`POST /v4/catalog/sources/{id}:refresh` and `roving catalog source refresh|add`: a git source fetched now, not at
its refresh time (a template just pushed shows at once), git's progress streamed as it fetches and drawn on a
terminal (step, percent, bytes, rate), a repository that no longer answers named with why."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import threading
import time

import pytest
import uvicorn

from tests.catalog_fixtures import commit, git_repository, reference_folder
from tests.unit.api.harness import Api
from tests.unit.api.test_cli_waits import ROVING, in_terminal

NDJSON = {"Accept": "application/x-ndjson"}


@pytest.fixture
def api() -> Api:
    return Api()


@pytest.fixture
def repo(tmp_path):
    return tmp_path / "templates"


@pytest.fixture
def source(api, repo) -> str:
    url = git_repository(repo, "hello_world")
    added = api.request("POST", "/v4/catalog/sources", api.admin, json={"name": "lab", "location": url, "scope": "cluster"})
    assert added.status_code == 201, added.text
    assert names(api) == ["hello_world"]  # the first listing clones it
    return added.json()["id"]


def names(api) -> list[str]:
    return [t["name"] for t in api.request("GET", "/v4/catalog", api.admin).json()["templates"]]


def test_a_template_pushed_to_the_repository_shows_after_a_refresh_not_a_minute_later(api, repo, source):
    reference_folder(repo, "blender")
    commit(repo, "blender")
    assert names(api) == ["hello_world"]  # its checkout is fresh for another minute
    answer = api.request("POST", f"/v4/catalog/sources/{source}:refresh", api.admin)
    assert answer.status_code == 200, answer.text
    assert answer.json()["templates"] == 2 and answer.json()["error"] == "" and answer.json()["name"] == "lab"
    assert names(api) == ["blender", "hello_world"]


def test_asked_for_ndjson_the_refresh_streams_gits_progress_then_its_answer(api, repo, source):
    reference_folder(repo, "blender")
    commit(repo, "blender")
    answer = api.request("POST", f"/v4/catalog/sources/{source}:refresh", api.admin, headers=NDJSON)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in answer.text.splitlines()]
    progress = [line["progress"] for line in lines[:-1]]
    assert any(re.match(r"(Counting|Compressing|Receiving) objects: 100% \(\d+/\d+\)", p) for p in progress), progress
    assert lines[-1]["templates"] == 2 and lines[-1]["error"] == ""


def test_a_repository_gone_says_why_and_an_unknown_source_is_a_404(api, repo, source):
    shutil.rmtree(repo)
    answer = api.request("POST", f"/v4/catalog/sources/{source}:refresh", api.admin)
    assert answer.status_code == 200 and answer.json()["error"].startswith("git fetch failed")
    assert names(api) == ["hello_world"]  # the last checkout still serves
    missing = api.request("POST", "/v4/catalog/sources/4d1c3d1e-0000-4000-8000-000000000000:refresh", api.admin,
                          headers=NDJSON)
    assert missing.status_code == 404


@pytest.fixture
def served(api):
    """The API on a loopback port, for the CLI run in a pseudo-terminal."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(api.app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def test_refresh_and_add_draw_gits_progress_on_a_terminal_and_answer_plainly_to_a_pipe(api, repo, source, served,
                                                                                         tmp_path):
    env = {"ROVING_API": served, "ROVING_TOKEN": api.admin, "XDG_CONFIG_HOME": str(tmp_path), "TERM": "xterm",
           "ROVING_CLI_WAIT": "0", "PATH": "/usr/bin:/bin"}
    reference_folder(repo, "blender")
    commit(repo, "blender")
    code, shown = in_terminal(["catalog", "source", "refresh", "lab"], env)
    assert code == 0, shown
    assert re.search(r"\r\x1b\[Krefreshing lab  (Counting|Compressing|Receiving) objects 100%", shown), shown
    assert "templates: 2" in shown.split("\r\x1b[K")[-1]  # the line cleared, then the answer
    other = git_repository(tmp_path / "other", "blender")
    (tmp_path / "other" / "assets.bin").write_bytes(os.urandom(2 * 2**20))  # enough for git to tell bytes and rate
    commit(tmp_path / "other", "assets")
    code, shown = in_terminal(["catalog", "source", "add", "other", other, "--scope", "cluster"], env)
    assert code == 0 and "\r\x1b[Krefreshing other  Receiving objects 100%" in shown, shown  # its first clone
    assert re.search(r"Receiving objects \d+%  [\d.]+ [KM]iB  [\d.]+ [KMG]iB/s", shown), shown  # bytes and rate
    piped = subprocess.run([ROVING, "catalog", "source", "refresh", "lab", "-o", "json"], env=env,
                           capture_output=True, text=True, timeout=60)
    assert piped.returncode == 0 and "Receiving" not in piped.stderr and json.loads(piped.stdout)["templates"] == 2


def test_a_member_who_may_read_a_source_may_not_make_the_server_fetch_it(api, source):
    _, member = api.organization_with_user("acme", "carol")
    assert "hello_world" in [t["name"] for t in api.request("GET", "/v4/catalog", member).json()["templates"]]
    for headers in ({}, NDJSON):
        answer = api.request("POST", f"/v4/catalog/sources/{source}:refresh", member, headers=headers)
        assert answer.status_code == 403 and "managers" in answer.json()["error"], answer.text


def test_a_refresh_asked_while_one_of_the_same_source_runs_is_refused_at_once_not_queued(api, source, tmp_path,
                                                                                         monkeypatch):
    """Each refresh waiting its turn holds one of the server's worker threads for as long as git may take: a
    manager asking many times at once (of a slow repository) would hold them all, and every tenant's requests wait."""
    slow = tmp_path / "slow-git"
    slow.mkdir()
    real = shutil.which("git")
    (slow / "git").write_text(f'#!/bin/sh\nsleep 3\nexec {real} "$@"\n')
    (slow / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{slow}:{os.environ['PATH']}")
    first: list = []
    running = threading.Thread(target=lambda: first.append(
        api.request("POST", f"/v4/catalog/sources/{source}:refresh", api.admin)))
    running.start()
    time.sleep(1.0)  # the first one's git is under way
    began = time.monotonic()
    second = api.request("POST", f"/v4/catalog/sources/{source}:refresh", api.admin)
    waited = time.monotonic() - began
    running.join(30)
    assert second.status_code == 409 and "under way" in second.json()["error"], second.text
    assert waited < 1.5, f"the second refresh waited {waited:.1f} s for the first"
    assert first[0].status_code == 200 and first[0].json()["error"] == "", first[0].text

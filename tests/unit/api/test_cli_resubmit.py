"""`roving workflow resubmit ID [--edit|--file]` and `roving workflow retry ID`: new workflows of the caller, by a
short id as the UI shows it; an edit in the person's editor, nothing submitted when it comes back unchanged, a
refused edit kept on disk; another tenant's workflow is not found."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from tests.unit.api.test_cli_objects import run
from tests.unit.api.test_resubmit_routes import alice, api, bob, failed  # noqa: F401 - the shared fixtures


def submitted_by(api, bearer, workflow):  # noqa: F811
    return api.request("GET", f"/v4/workflows/{workflow}", bearer).json()


def test_retry_by_a_short_id_submits_the_unfinished_jobs_and_says_which(api, alice, failed, capsys):  # noqa: F811
    code, out, _ = run(api, alice, ["workflow", "retry", failed[:8], "-o", "json"], capsys)
    assert code == 0, out
    answer = json.loads(out)
    assert answer["retry_of"] == failed and answer["jobs"] == "train"
    assert [s["name"] for s in submitted_by(api, alice, answer["id"])["stages"]] == ["train"]


def test_resubmit_edit_submits_what_the_editor_saved(api, alice, failed, capsys, monkeypatch):  # noqa: F811
    monkeypatch.setenv("EDITOR", "sed -i 's/exit 3/echo fixed/'")
    code, out, _ = run(api, alice, ["workflow", "resubmit", failed, "--edit", "--name", "fixed", "-o", "json"], capsys)
    assert code == 0, out
    new = json.loads(out)["id"]
    shown = api.request("GET", f"/v4/workflows/{new}/definition", alice).json()
    assert shown["name"] == "fixed" and "echo fixed" in shown["definition"] and "exit 3" not in shown["definition"]


def test_an_edit_that_comes_back_unchanged_submits_nothing(api, alice, failed, capsys, monkeypatch):  # noqa: F811
    before = len(api.request("GET", "/v4/workflows", alice).json()["workflows"])
    monkeypatch.setenv("EDITOR", "true")
    code, _, err = run(api, alice, ["workflow", "resubmit", failed, "--edit"], capsys)
    assert code == 1 and "unchanged: nothing resubmitted" in err
    assert len(api.request("GET", "/v4/workflows", alice).json()["workflows"]) == before


def test_a_refused_edit_is_kept_on_disk_and_named(api, alice, failed, capsys, monkeypatch, tmp_path):  # noqa: F811
    monkeypatch.setenv("EDITOR", "sed -i 's/^jobs:/jobz:/'")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    code, _, err = run(api, alice, ["workflow", "resubmit", failed, "--edit"], capsys)
    assert code == 1 and "jobz" in err
    kept = Path(err.split("your edit is kept in ")[1].split(":")[0])
    assert kept.parent == tmp_path and "jobz:" in kept.read_text()
    kept.write_text(kept.read_text().replace("jobz:", "jobs:"))
    code, _, _ = run(api, alice, ["workflow", "resubmit", failed, "--file", str(kept)], capsys)
    assert code == 0  # fixed and sent from the kept file


def test_another_tenant_cannot_resubmit_or_retry_it(api, bob, failed, capsys):  # noqa: F811
    for action in ("resubmit", "retry"):
        code, _, err = run(api, bob, ["workflow", action, failed], capsys)
        assert code != 0 and "not found" in err.lower(), err

"""`roving context token` prints the current context's access token alone, for scripts and scrape configs."""

import pytest

from api.cli.client import save_contexts
from api.cli.main import build_parser, execute


def run_token(client=None):
    return execute(build_parser().parse_args(["context", "token"]), client)


def test_context_token_prints_the_current_contexts_token_and_nothing_else(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("ROVING_TOKEN", raising=False)
    monkeypatch.delenv("FB_WORKFLOW_TOKEN", raising=False)
    save_contexts({"current": "lab", "contexts": {
        "lab": {"api": "http://lab:8080", "token": "tok-lab", "refresh_token": "r"},
        "prod": {"api": "http://prod:8080", "token": "tok-prod"}}})
    assert run_token(object()) == 0
    assert capsys.readouterr().out == "tok-lab\n"


def test_context_token_without_a_login_says_how_to_get_one(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("ROVING_TOKEN", raising=False)
    monkeypatch.delenv("FB_WORKFLOW_TOKEN", raising=False)
    with pytest.raises(SystemExit) as exit:
        run_token(object())
    assert exit.value.code == 2
    assert "roving context login" in capsys.readouterr().err

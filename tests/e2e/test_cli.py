"""The `roving` CLI against the real stack: what a user types, what they see, and the exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CLI = "import sys; from api.cli import main; sys.exit(main())"


def roving(stack, *args: str, token: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "ROVING_API": stack.url, "ROVING_TOKEN": token or stack.token("admin"),
           "HOME": str(stack.data_dir)}
    return subprocess.run([sys.executable, "-c", CLI, *args], env=env, capture_output=True, text=True, timeout=120)


def test_workflow_start_watch_runs_the_example_to_the_end(stack):
    done = roving(stack, "workflow", "start", str(EXAMPLES / "hello.yaml"), "--name", "cli-hello", "--watch")
    assert done.returncode == 0, done.stderr
    assert "FINISHED" in done.stdout


def test_json_output_is_machine_readable(stack):
    listed = roving(stack, "node", "list", "-o", "json")
    assert listed.returncode == 0, listed.stderr
    names = {n["name"] for n in json.loads(listed.stdout)["nodes"]} if isinstance(json.loads(listed.stdout), dict) \
        else {n["name"] for n in json.loads(listed.stdout)}
    assert {"local-1", "local-2"} <= names


def test_a_server_refusal_exits_1_with_its_message(stack, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: v4\njobs:\n  a:\n    image: {uri: alpine}\n")
    refused = roving(stack, "workflow", "start", str(bad))
    assert refused.returncode == 1
    assert "jobs.a.image" in (refused.stdout + refused.stderr)


def test_bad_usage_exits_2_and_help_explains(stack):
    assert roving(stack, "workflow", "start").returncode == 2
    helped = roving(stack, "node", "cordon", "--help")
    assert helped.returncode == 0 and "reason" in helped.stdout


def test_an_invalid_token_is_refused_with_exit_1(stack):
    assert roving(stack, "workflow", "list", token="rv1.not.valid").returncode == 1

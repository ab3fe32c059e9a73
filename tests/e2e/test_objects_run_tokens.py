"""The object store, `roving run` and workflow tokens on the README's stack, as a user types them."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
CLI = "import sys; from api.cli import main; sys.exit(main())"


def roving(stack, *args: str, token: str | None = None, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "ROVING_API": stack.url, "ROVING_TOKEN": token or stack.token("admin"),
           "HOME": str(stack.data_dir)}
    env.pop("FB_WORKFLOW_TOKEN", None)
    return subprocess.run([sys.executable, "-c", CLI, *args], env=env, capture_output=True, text=True, timeout=120,
                          input=stdin)


def test_object_put_get_and_list_through_the_cli(stack, tmp_path):
    data = os.urandom(3 * 2**20 + 5)
    (tmp_path / "weights.bin").write_bytes(data)
    put = roving(stack, "object", "put", str(tmp_path / "weights.bin"), "models/", "-o", "json")
    assert put.returncode == 0, put.stderr
    assert json.loads(put.stdout) == {"object": "object://user/models/weights.bin", "result": "created",
                                      "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    again = roving(stack, "object", "put", str(tmp_path / "weights.bin"), "models/weights.bin", "-o", "json")
    assert again.returncode == 0 and json.loads(again.stdout)["result"] == "unchanged"
    (tmp_path / "weights.bin").write_bytes(data[:-1] + b"!")
    refused = roving(stack, "object", "put", str(tmp_path / "weights.bin"), "models/")
    assert refused.returncode == 1 and "--force" in refused.stderr
    forced = roving(stack, "object", "put", str(tmp_path / "weights.bin"), "models/", "--force", "-o", "json")
    assert forced.returncode == 0 and json.loads(forced.stdout)["result"] == "replaced"
    (tmp_path / "back").mkdir()
    got = roving(stack, "object", "get", "object://user/models/weights.bin", str(tmp_path / "back") + "/")
    assert got.returncode == 0, got.stderr
    assert (tmp_path / "back" / "weights.bin").read_bytes() == data[:-1] + b"!"
    roving(stack, "object", "put", str(tmp_path / "weights.bin"), "models/copy.bin")
    listed = roving(stack, "object", "list", "models/", "-p", "1", "-m", "1", "-o", "json")
    assert [o["name"] for o in json.loads(listed.stdout)] == ["models/copy.bin"]
    assert "more objects follow" in listed.stderr


def test_run_exits_with_the_jobs_code_and_keeps_stdout_and_stderr_apart(stack):
    done = roving(stack, "run", "--", "sh", "-c", "echo to-out; echo to-err >&2; exit 3")
    assert done.returncode == 3, done.stderr
    assert done.stdout == "to-out\n"
    assert "to-err" in done.stderr and "to-out" not in done.stderr


def test_run_mounts_an_ephemeral_volume_and_reads_standard_input(stack):
    # under ROVING_RUNTIME=host (roving up's) a volume mounted at /scratch is ./scratch in the job's directory
    done = roving(stack, "run", "-i", "--volume", "/scratch", "--", "sh", "-c",
                  "cat > /scratch/in && wc -l < /scratch/in && ls /scratch", stdin="one\ntwo\nthree\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["3", "in"]


def test_run_of_a_missing_command_exits_127_like_a_shell(stack):
    done = roving(stack, "run", "--", "/no/such/program")
    assert done.returncode == 127, (done.stdout, done.stderr)


def test_run_refused_by_the_server_exits_1_and_bad_usage_2(stack):
    refused = roving(stack, "run", "--cpus", "100000", "--", "true")
    assert refused.returncode == 1 and "cpu" in refused.stderr.lower()
    bad = roving(stack, "run", "--volume", "data", "--", "true")
    assert bad.returncode == 2 and "--volume 'data'" in bad.stderr


def job_python() -> list[str] | None:
    """A command that runs this checkout's `roving` as the job's user (nobody under a root agent), or None.

    The test's own interpreter may sit where nobody can reach it (under /root); the system's python3 of the same
    minor version can import the checkout and the venv's packages when they are readable."""
    for python in (sys.executable, shutil.which("python3") or "", "/usr/bin/python3"):
        if not python:
            continue
        probe = ["runuser", "-u", "nobody", "--", python, "-c", "import sys; print(sys.version_info[:2])"]
        if os.geteuid() != 0:
            probe = probe[4:]
        try:
            out = subprocess.run(probe, capture_output=True, text=True, timeout=30)
        except OSError:
            continue
        if out.returncode == 0 and out.stdout.strip() == str(tuple(sys.version_info[:2])):
            return [python]
    return None


def test_a_job_starts_a_child_with_its_token_whose_secret_resolves_and_cannot_create_secrets(stack, job_dir):
    python = job_python()
    if python is None:
        pytest.skip("no python the job's user can run that matches this one (needed to run roving in a job)")
    client, value = stack.client, "hf_child_value_123"
    created = client.post("/v4/secrets", json={"name": "hf", "value": value})
    assert created.status_code == 201, created.text
    (job_dir / "child.yaml").write_text(f"""version: v4
jobs:
  child:
    image: {{uri: docker://alpine:3.20}}
    env: [HF_TOKEN=secret://user/hf]
    script: echo "$HF_TOKEN" > {job_dir}/child-secret
""")
    paths = ":".join(p for p in sys.path if p and Path(p).is_dir())
    cli = f'PYTHONPATH="{paths}" {python[0]} -c "{CLI}"'
    parent = f"""version: v4
jobs:
  parent:
    image: {{uri: docker://alpine:3.20}}
    script: |
      echo "$FB_WORKFLOW_TOKEN" > {job_dir}/token
      {cli} workflow start {job_dir}/child.yaml -o json > {job_dir}/child.json 2> {job_dir}/child.err
      {cli} secret create mine --value nope 2> {job_dir}/secret.err; echo $? > {job_dir}/secret.rc
      echo parent done
"""
    workflow = stack.submit(parent, "parent")
    ended = stack.wait_status(workflow, ("FINISHED", "FAILED", "CANCELED"), timeout=90)
    assert ended["status"] == "FINISHED", stack.stage_log(workflow, "parent", "parent done")
    child = json.loads((job_dir / "child.json").read_text())["id"]
    assert stack.wait_status(child, ("FINISHED", "FAILED", "CANCELED"), timeout=60)["status"] == "FINISHED"
    assert stack.workflow(child)["submitted_by"] == "admin"
    assert (job_dir / "child-secret").read_text().strip() == value
    assert (job_dir / "secret.rc").read_text().strip() == "1"
    assert "HTTP 403" in (job_dir / "secret.err").read_text()
    token = (job_dir / "token").read_text().strip()
    assert token.startswith("rv1.")
    late = httpx.get(f"{stack.url}/v4/workflows", headers={"Authorization": f"Bearer {token}"}, timeout=10)
    assert late.status_code == 401 and "has ended" in late.json()["error"]
    logs = "".join(p.read_text(errors="replace") for p in stack.data_dir.glob("*.log"))
    assert token not in logs and token not in stack.stage_log(workflow, "parent", "parent done")


def test_object_ingress_reads_an_object_into_a_volume_with_the_workflows_token(stack, tmp_path):
    (tmp_path / "input.txt").write_text("from the object store\n")
    assert roving(stack, "object", "put", str(tmp_path / "input.txt"), "inputs/input.txt").returncode == 0
    definition = """version: v4
volumes:
  data:
    reference: volume://user/ephemeral
    ingress:
      - source: {uri: object://user/inputs/input.txt}
        destination: {uri: file://in/input.txt}
jobs:
  show:
    image: {uri: docker://alpine:3.20}
    script: cat /data/in/input.txt
    mounts: {/data: {volume: data}}
"""
    workflow = stack.submit(definition, "ingress")
    ended = stack.wait_status(workflow, ("FINISHED", "FAILED", "CANCELED"), timeout=90)
    assert ended["status"] == "FINISHED", (ended, stack.stage_log(workflow, "ingress:data", "done"))
    assert "from the object store" in stack.stage_log(workflow, "show", "from the object store")


def test_run_follows_output_as_it_is_written(stack):
    began = time.monotonic()
    with subprocess.Popen([sys.executable, "-c", CLI, "run", "--", "sh", "-c", "echo first; sleep 4; echo last"],
                          env={**os.environ, "ROVING_API": stack.url, "ROVING_TOKEN": stack.token("admin")},
                          stdout=subprocess.PIPE, text=True) as process:
        assert process.stdout is not None
        first = process.stdout.readline()
        seen = time.monotonic() - began
        rest = process.stdout.read()
        assert process.wait(60) == 0
    assert (first, rest) == ("first\n", "last\n")
    assert seen < time.monotonic() - began - 2, "the first line came only at the end"


def test_object_egress_puts_a_result_and_never_replaces_other_content(stack, tmp_path):
    def egress(text: str) -> tuple[str, dict]:
        definition = f"""version: v4
volumes:
  out:
    reference: volume://user/ephemeral
    egress:
      - source: {{uri: file://result.txt}}
        destination: {{uri: object://user/results/result.txt}}
jobs:
  make:
    image: {{uri: docker://alpine:3.20}}
    script: echo {text} > /out/result.txt
    mounts: {{/out: {{volume: out}}}}
"""
        workflow = stack.submit(definition, "egress")
        return workflow, stack.wait_status(workflow, ("FINISHED", "FAILED", "CANCELED"), timeout=90)

    first, ended = egress("one")
    assert ended["status"] == "FINISHED", stack.stage_log(first, "egress:out", "done")
    got = roving(stack, "object", "get", "results/result.txt", "-")
    assert got.returncode == 0 and got.stdout == "one\n"
    second, ended = egress("two")
    assert ended["status"] == "FAILED"
    log = stack.stage_log(second, "egress:out", "different content")
    assert "already exists with different content" in log
    assert roving(stack, "object", "get", "results/result.txt", "-").stdout == "one\n"

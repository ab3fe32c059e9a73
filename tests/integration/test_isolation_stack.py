"""`roving up` as root: its local agents run each job as its owner's uid (never 0), in cgroups, in work directories
outside the data directory, and a job cannot read the admin token even when the data directory's parent is open to
all."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import httpx
import pytest

from tests.e2e.stack import LocalStack

PROBE = """version: v4
jobs:
  probe:
    image: {{uri: docker://alpine:3.20}}
    script: |
      echo "uid=$(id -u)"
      echo "pwd=$PWD"
      cat {data}/admin.token || echo "token: denied"
      cat ../../../admin.token 2>/dev/null || echo "relative: denied"
      ls {data} || echo "listing: denied"
    resource: {{cpu: {{cores: 1}}, memory: {{size: 64MiB}}}}
"""


def logged(stack: LocalStack, client: httpx.Client, workflow_id: str, stage: str) -> str:
    """The stage's log once it has arrived: it may trail the stage's end by a moment."""
    found: list[str] = []
    stack.wait(lambda: found.append(client.get(f"/v4/workflows/{workflow_id}/log/{stage}").text) or found[-1],
               10, f"the log of {stage}")
    return found[-1]


@pytest.fixture(scope="module")
def stack():
    if os.geteuid() != 0:
        pytest.skip("jobs run as another user only under a root agent (CI runs as root)")
    parent = Path(tempfile.mkdtemp(prefix="roving-stack-"))
    parent.chmod(0o755)  # so nothing but the data directory's own mode stands between a job and its files
    data_dir = parent / "data"
    data_dir.mkdir(mode=0o755)
    running = LocalStack(data_dir, nodes=1).start()
    yield running
    running.stop()
    shutil.rmtree(parent, ignore_errors=True)


def test_a_job_runs_as_its_owner_outside_the_data_directory_and_cannot_read_the_admin_token(stack):
    workflow_id = stack.submit(PROBE.format(data=stack.data_dir), "probe")
    done = stack.wait_status(workflow_id, ("FINISHED", "FAILED"))
    log = logged(stack, stack.client, workflow_id, "probe")
    assert done["status"] == "FINISHED", log
    me = stack.client.get("/v4/auth/whoami").json()["user_id"]
    assert f"uid={stack.client.get(f'/v4/users/{me}').json()['uid']}" in log
    workdir = next(line.removeprefix("pwd=") for line in log.splitlines() if line.startswith("pwd="))
    assert not Path(workdir).is_relative_to(stack.data_dir)
    assert "token: denied" in log and "relative: denied" in log and "listing: denied" in log
    assert stack.token("admin") not in log
    assert stack.data_dir.stat().st_mode & 0o777 == 0o700
    node = stack.ready_nodes()[0]
    assert node["annotations"]["roving.io/job-user"] == "owner,else=nobody(65534)"
    assert node["annotations"]["roving.io/isolation"] in ("cgroup-v1", "cgroup-v2")


UID = """version: v4
jobs:
  whoami:
    image: {uri: docker://alpine:3.20}
    script: id -u
    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}
"""


def test_two_users_jobs_run_under_their_own_uids_and_neither_as_root(stack):
    org = stack.client.post("/v4/organizations", json={"name": "posix"}).json()["id"]
    seen = {}
    for name in ("ada", "ben"):
        body = {"username": name, "email": f"{name}@posix.example", "password": "Blue-Kettle-42-Moon"}
        assert stack.client.post(f"/v4/organizations/{org}/users", json=body).status_code == 201
        login = stack.client.post("/v4/auth/login", json={"username": name, "password": body["password"]}).json()
        with httpx.Client(base_url=stack.url, headers=stack.auth(login["token"]), timeout=30) as client:
            workflow_id = stack.submit(UID, f"{name}-uid", client)
            done = stack.wait_status(workflow_id, ("FINISHED", "FAILED"))
            log = logged(stack, client, workflow_id, "whoami")
            assert done["status"] == "FINISHED", log
            me = client.get("/v4/auth/whoami").json()["user_id"]
            seen[name] = (log.split()[-1], str(client.get(f"/v4/users/{me}").json()["uid"]))
    assert seen["ada"][0] == seen["ada"][1] and seen["ben"][0] == seen["ben"][1]
    assert seen["ada"][0] != seen["ben"][0] and "0" not in (seen["ada"][0], seen["ben"][0])

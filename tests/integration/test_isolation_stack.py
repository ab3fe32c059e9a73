"""`roving up` as root: its local agents run jobs as nobody, in cgroups, in work directories outside the data
directory, and a job cannot read the admin token even when the data directory's parent is open to all."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

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


def test_a_job_runs_as_nobody_outside_the_data_directory_and_cannot_read_the_admin_token(stack):
    workflow_id = stack.submit(PROBE.format(data=stack.data_dir), "probe")
    done = stack.wait_status(workflow_id, ("FINISHED", "FAILED"))
    log = stack.client.get(f"/v4/workflows/{workflow_id}/log/probe").text
    assert done["status"] == "FINISHED", log
    assert "uid=65534" in log
    workdir = next(line.removeprefix("pwd=") for line in log.splitlines() if line.startswith("pwd="))
    assert not Path(workdir).is_relative_to(stack.data_dir)
    assert "token: denied" in log and "relative: denied" in log and "listing: denied" in log
    assert stack.token("admin") not in log
    assert stack.data_dir.stat().st_mode & 0o777 == 0o700
    node = stack.ready_nodes()[0]
    assert node["annotations"]["roving.io/job-user"] == "nobody(65534)"
    assert node["annotations"]["roving.io/isolation"] in ("cgroup-v1", "cgroup-v2")

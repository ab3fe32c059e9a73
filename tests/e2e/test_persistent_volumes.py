"""Persistent volumes on the README stack: a cluster admin sets the local provisioner's root, one workflow writes to
`volume://user/persistent`, and the next workflow of the same user finds the file; the directory is the user's
(their uid, mode 0700) and stays when the workflows' ephemeral volumes are swept."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from tests.e2e.stack import LocalStack

WRITE = """
version: v4
volumes:
  keep: {reference: volume://user/persistent}
  tmp: {reference: volume://user/ephemeral}
jobs:
  write:
    image: {uri: docker://alpine:3.20}
    script: echo first-run > /keep/result.txt && echo scratch > /tmp2/t
    mounts: {/keep: {volume: keep}, /tmp2: {volume: tmp}}
"""
READ = """
version: v4
volumes:
  keep: {reference: volume://user/persistent}
jobs:
  read:
    image: {uri: docker://alpine:3.20}
    script: cat /keep/result.txt
    mounts: {/keep: {volume: keep}}
"""


@pytest.fixture(scope="module")
def root():
    path = Path(tempfile.mkdtemp(prefix="roving-e2e-volumes-"))
    path.chmod(0o711)  # jobs run as their owners: they must pass through to their own directories
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def stack(tmp_path_factory, root):
    running = LocalStack(tmp_path_factory.mktemp("roving"), settings={"ROVING_WORK_DIR": str(root / "work")}).start()
    yield running
    running.stop()


def test_a_second_workflow_sees_the_files_the_first_left_in_the_users_persistent_volume(stack, root):
    changed = stack.client.put("/v4/admin/centralconfig", json={"storage.local.root": str(root / "volumes")})
    assert changed.status_code == 200, changed.text
    first = stack.submit(WRITE, "write")
    done = stack.wait_status(first, ("FINISHED", "FAILED", "CANCELED"), timeout=60)
    assert done["status"] == "FINISHED", (done["stages"], stack.stage_log(first, "write", "\0", 3))
    stack.wait(lambda: not list((root / "work").glob("*/*/.volumes")), 30, "the ended workflow's ephemeral volume")
    homes = list((root / "volumes").glob("*/user/*"))
    assert len(homes) == 1 and (homes[0] / "result.txt").read_text() == "first-run\n"
    info = homes[0].stat()
    assert (info.st_mode & 0o777, str(info.st_uid)) == (0o700, homes[0].name)  # the user's uid names it
    second = stack.submit(READ, "read")
    assert stack.wait_status(second, ("FINISHED", "FAILED", "CANCELED"), timeout=60)["status"] == "FINISHED"
    assert "first-run" in stack.stage_log(second, "read", "first-run")

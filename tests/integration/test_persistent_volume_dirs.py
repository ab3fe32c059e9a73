"""Persistent volumes as a node makes them: the provisioner's directory, made on first use with its owner's ids and
mode, seen by a later workflow, and kept when the workflows' ephemeral volumes are swept."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from adapters.executor import Executor, JobUser
from domain.agent_start import PersistentVolume
from tests.integration.test_executor import mounting_sandbox, run, spec

NOBODY = JobUser(uid=65534, gid=65534, name="nobody")


@pytest.fixture
def open_root():
    """A root the job users can pass through (pytest's tmp_path sits in a 0700 directory of root's)."""
    if os.geteuid() != 0:
        pytest.skip("running jobs as their owners needs root (CI runs as root)")
    root = Path(tempfile.mkdtemp(prefix="roving-volumes-"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def test_a_users_persistent_volume_is_made_theirs_and_a_later_workflow_sees_its_files(open_root):
    executor = Executor(open_root / "work", kill_grace=0.3, user=NOBODY, sandbox=mounting_sandbox())
    home = open_root / "volumes" / "org-1" / "user" / "100001"
    volume = PersistentVolume(path=str(home), uid=100001, gid=100001, mode=0o700)
    first = spec(workflow_id="wf-1", stage="write", mounts={"/data": "data"}, persistent={"data": volume},
                 uid=100001, gid=100001, script="echo kept > /data/result.txt")
    recorder, result = run(executor, first)
    assert result == (0, "exited with code 0"), recorder.text("stderr")
    info = home.stat()
    assert (info.st_uid, info.st_gid, info.st_mode & 0o7777) == (100001, 100001, 0o700)
    assert (home.parent.stat().st_mode & 0o777) == 0o711  # the user folder's parents: searchable, not listable
    assert executor.volumes.keep_only(set()) == []  # the ended workflow had no ephemeral volume to sweep
    second = spec(workflow_id="wf-2", stage="read", mounts={"/data": "data"}, persistent={"data": volume},
                  uid=100001, gid=100001, script="cat /data/result.txt")
    recorder, result = run(executor, second)
    assert (result, recorder.text().strip()) == ((0, "exited with code 0"), "kept")
    assert (home / "result.txt").stat().st_uid == 100001


def test_a_group_volume_is_shared_by_its_members_and_closed_to_others(open_root):
    executor = Executor(open_root / "work", kill_grace=0.3, user=NOBODY, sandbox=mounting_sandbox())
    shared = open_root / "volumes" / "org-1" / "group" / "200001" / "shared"
    volume = PersistentVolume(path=str(shared), uid=100001, gid=200001, mode=0o2770)
    writer = spec(workflow_id="wf-1", stage="w", mounts={"/g": "g"}, persistent={"g": volume}, uid=100001,
                  gid=200001, groups=[200001], script="echo hi > /g/note")
    assert run(executor, writer)[1][0] == 0
    member = spec(workflow_id="wf-2", stage="m", mounts={"/g": "g"}, persistent={"g": volume}, uid=100002,
                  gid=200001, groups=[200001], script="cat /g/note")
    recorder, result = run(executor, member)
    assert (result[0], recorder.text().strip()) == (0, "hi")
    stranger = spec(workflow_id="wf-3", stage="s", mounts={"/g": "g"}, persistent={"g": volume}, uid=100003,
                    gid=100003, script="cat /g/note")
    recorder, result = run(executor, stranger)
    assert result[0] != 0 and "Permission denied" in recorder.text("stderr")
    assert (shared.stat().st_gid, shared.stat().st_mode & 0o7777) == (200001, 0o2770)

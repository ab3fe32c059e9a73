"""Jobs isolated on this machine: cgroup limits with a clear OOM reason, nothing outliving a job, the job's user."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from adapters import cgroups
from adapters.executor import Executor, JobUser
from api.composition.bootstrap import write_secret
from tests.integration.test_executor import Recorder, is_gone, run, spec


@pytest.fixture
def hierarchy():
    if os.geteuid() != 0:
        pytest.skip("cgroups need root (CI runs as root)")
    found, why = cgroups.detect(f"test-{uuid.uuid4().hex[:8]}")
    if found is None:
        pytest.skip(f"no usable cgroups: {why}")
    yield found
    found.reap()
    found.close()
    assert not any(parent.exists() for parent in found._parents().values())


@pytest.fixture
def executor(tmp_path: Path, hierarchy) -> Executor:
    return Executor(tmp_path / "work", kill_grace=0.3, cgroups=hierarchy)


def test_a_job_over_its_memory_request_is_oom_killed_with_a_reason_naming_the_limit(executor):
    hog = spec(memory_bytes=64 * 2**20, command=["python3", "-c", "x = b'1' * (300 << 20); print('survived')"])
    recorder, (code, reason) = run(executor, hog, timeout=30)
    assert code == 137
    assert reason == "out of memory: killed at its memory limit of 64MiB"
    assert "survived" not in recorder.text()


def test_a_job_within_its_memory_request_is_not_reported_as_oom(executor):
    fits = spec(memory_bytes=256 * 2**20, command=["python3", "-c", "x = b'1' * (32 << 20); print('fine')"])
    recorder, result = run(executor, fits, timeout=30)
    assert result == (0, "exited with code 0") and recorder.text() == "fine\n"


def test_a_daemonized_child_is_gone_when_its_job_ends(executor):
    script = "setsid sh -c 'sleep 300' </dev/null >/dev/null 2>&1 &\necho $! > child.pid\nsleep 0.2"
    _, result = run(executor, spec(script=script))
    assert result == (0, "exited with code 0")
    child = int((executor.workdir(spec()) / "child.pid").read_text())
    deadline = time.monotonic() + 2
    while not is_gone(child) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert is_gone(child), "the setsid child outlived its job"


def test_a_canceled_job_loses_its_daemonized_children_too(executor):
    recorder = Recorder()
    script = "setsid sh -c 'trap \"\" TERM; sleep 300' </dev/null >/dev/null 2>&1 &\necho $! > child.pid\necho up\nwait"
    running = executor.start(spec(script=script), recorder.output, recorder.exit)
    assert recorder.first_output.wait(5)
    child = int((executor.workdir(spec()) / "child.pid").read_text())
    running.cancel("canceled by alice")
    assert running.wait(5) == (143, "canceled by alice")
    assert is_gone(child)


def test_the_job_runs_in_its_own_cgroup_with_the_cpu_quota_and_pids_limit_and_it_is_removed_after(executor):
    probe = spec(cpu_cores=1.5, memory_bytes=128 * 2**20, command=["cat", "/proc/self/cgroup"])
    recorder, result = run(executor, probe)
    assert result[0] == 0
    lines = dict(line.split(":", 2)[1:] for line in recorder.text().splitlines())
    name = f"/roving/{executor.cgroups.agent}/alloc-1-e3"
    if executor.cgroups.version == 1:
        assert lines["memory"].endswith(name) and lines["pids"].endswith(name)
    else:
        assert lines[""].endswith(name)
    assert not any(path.exists() for path in executor.cgroups._parents().values()
                   for path in [path / "alloc-1-e3"])


def test_limits_are_written_before_a_process_joins(hierarchy):
    group = hierarchy.create("limits-probe", cgroups.Limits(memory=96 * 2**20, cpus=0.5, pids=64))
    try:
        if hierarchy.version == 1:
            assert int((group.dirs["memory"] / "memory.limit_in_bytes").read_text()) == 96 * 2**20
            assert (group.dirs["pids"] / "pids.max").read_text().strip() == "64"
            if "cpu" in group.dirs:
                assert (group.dirs["cpu"] / "cpu.cfs_quota_us").read_text().strip() == "50000"
        else:
            assert (group.dirs[""] / "memory.max").read_text().strip() == str(96 * 2**20)
            assert (group.dirs[""] / "pids.max").read_text().strip() == "64"
    finally:
        group.remove()
    assert not any(d.exists() for d in group.dirs.values())


def test_a_restarted_agent_reaps_the_cgroups_its_predecessor_left(hierarchy):
    left = hierarchy.create("left-behind", cgroups.Limits(pids=16))
    orphan = subprocess.Popen(["sleep", "300"])
    left.join(orphan.pid)
    assert hierarchy.reap() == ["left-behind"]
    assert orphan.wait(5) == -9


@pytest.fixture
def open_root():
    """A work root the job user can reach: pytest's own tmp_path sits in a 0700 directory of root's."""
    if os.geteuid() != 0:
        pytest.skip("running jobs as another user needs root (CI runs as root)")
    root = Path(tempfile.mkdtemp(prefix="roving-isolation-"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def test_a_job_of_a_root_agent_runs_as_the_job_user_in_its_own_directory_and_cannot_read_the_admin_token(open_root):
    data_dir = open_root / "data"
    data_dir.mkdir(mode=0o700)
    write_secret(data_dir / "admin.token", "admin-secret")
    user = JobUser(uid=65534, gid=65534, name="nobody")
    executor = Executor(open_root / "work", kill_grace=0.3, user=user)
    script = (f"id -u; id -g; echo $HOME; touch mine; cat {data_dir}/admin.token || echo denied; "
              f"ls {open_root}/work || echo unlisted")
    recorder, result = run(executor, spec(script=script, files={"in.txt": "x"}))
    workdir = executor.workdir(spec())
    lines = recorder.text().splitlines()
    assert lines == ["65534", "65534", str(workdir), "denied", "unlisted"]
    assert "admin-secret" not in recorder.text() + recorder.text("stderr")
    assert result == (0, "exited with code 0")
    assert (workdir / "mine").stat().st_uid == 65534 and (workdir / "in.txt").stat().st_uid == 65534
    assert workdir.stat().st_mode & 0o777 == 0o700


def test_a_work_root_planted_by_another_user_is_refused(open_root):
    planted = open_root / "planted"
    planted.mkdir()
    os.chown(planted, 65534, 65534)
    with pytest.raises(PermissionError, match="belongs to uid 65534"):
        Executor(planted, user=JobUser(uid=65534, gid=65534, name="nobody"))


def test_a_root_agent_runs_each_job_as_its_owners_uid_and_groups(open_root):
    executor = Executor(open_root / "work", kill_grace=0.3, user=JobUser(uid=65534, gid=65534, name="nobody"))
    outputs = []
    for n, (uid, gid, groups) in enumerate([(100001, 200001, [200001, 200002]), (100002, 100002, [])]):
        owned = spec(stage=f"s{n}", script="id -u; id -g; id -G; touch mine", uid=uid, gid=gid, groups=groups)
        recorder, result = run(executor, owned)
        assert result == (0, "exited with code 0"), recorder.text("stderr")
        outputs.append(recorder.text().splitlines())
        assert (executor.workdir(owned) / "mine").stat().st_uid == uid
    assert outputs[0][:2] == ["100001", "200001"] and set(outputs[0][2].split()) == {"200001", "200002"}
    assert outputs[1] == ["100002", "100002", "100002"]

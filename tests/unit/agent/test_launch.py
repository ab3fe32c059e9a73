"""A job is set up by a launcher shell (cgroup, memlock, user) rather than Python in a fork of the agent."""

from __future__ import annotations

import subprocess
from pathlib import Path

import adapters.launch as launch
from adapters.cgroups import Cgroup, Limits
from adapters.runspec import JobUser

NOBODY = JobUser(uid=65534, gid=65534, name="nobody", groups=(65534, 100))


def test_nothing_to_set_up_needs_no_launcher():
    assert launch.launcher(None, None, None) == []


def test_the_launcher_joins_every_controller_limits_memlock_and_becomes_the_user(monkeypatch):
    monkeypatch.setattr(launch, "raises_limits", lambda: True)  # root with CAP_SYS_RESOURCE: the request as asked
    cgroup = Cgroup(1, {"memory": Path("/sys/fs/cgroup/memory/roving/a/x"), "pids": Path("/sys/fs/cgroup/pids/roving/a/x")},
                    Limits())
    argv = launch.launcher(cgroup, 64 << 20, NOBODY)
    assert argv[:2] == ["/bin/sh", "-c"]
    procs, memlock, become = argv[4:]
    assert procs.split() == ["/sys/fs/cgroup/memory/roving/a/x/cgroup.procs", "/sys/fs/cgroup/pids/roving/a/x/cgroup.procs"]
    assert memlock.endswith("-l 65536")
    assert become == "--reuid=65534 --regid=65534 --groups=65534,100"


def test_a_user_change_without_setpriv_falls_back_to_the_preexec(monkeypatch):
    monkeypatch.setattr(launch, "SETPRIV", None)
    assert launch.launcher(None, None, NOBODY) is None
    assert launch.launcher(None, 1 << 20, None) is not None  # a limit alone needs no setpriv


def test_the_launched_command_runs_with_its_arguments_and_the_jobs_path_is_never_used(tmp_path):
    evil = tmp_path / "setpriv"
    evil.write_text("#!/bin/sh\necho hijacked\n")
    evil.chmod(0o755)
    argv = [*launch.launcher(None, 1 << 20, None), "/bin/sh", "-c", 'echo "$0 $1"', "a b", "c"]
    done = subprocess.run(argv, env={"PATH": str(tmp_path)}, capture_output=True, text=True, check=True)
    assert done.stdout == "a b c\n"

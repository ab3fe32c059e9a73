"""The `command` volume provisioner's program as it is run: its answer checked against the admin's root, its
reason (never its stderr) what users see, and a program that hangs killed at its timeout."""

from __future__ import annotations

import time

from adapters.provisioners.storage_command import provision
from domain.storage_provisioner_spec import StorageSpec
from tests.unit.volumes.test_storage_provisioners import volume


def program(tmp_path, body: str, timeout: float = 10) -> StorageSpec:
    path = tmp_path / "make-volume"
    path.write_text("#!/bin/sh\ncat > /dev/null\n" + body)
    path.chmod(0o755)
    return StorageSpec(storage_class="lustre", program=str(path), root=str(tmp_path / "lustre"),
                       timeout_seconds=timeout)


def test_the_directory_the_program_answers_under_the_root_is_the_volumes(tmp_path):
    spec = program(tmp_path, f'echo "made it"; echo \'{{"path": "{tmp_path}/lustre/acme/d/"}}\'\n')
    assert provision("lustre", spec, volume()).path == f"{tmp_path}/lustre/acme/d"


def test_a_directory_outside_the_root_is_refused_whatever_the_program_says(tmp_path):
    spec = program(tmp_path, f'echo \'{{"path": "{tmp_path}/lustre/../etc"}}\'\n')
    outcome = provision("lustre", spec, volume())
    assert outcome.path == "" and "not an absolute, normalized path" in outcome.reason


def test_a_failure_shows_the_reason_the_program_printed_and_never_its_stderr(tmp_path):
    spec = program(tmp_path, 'echo "password=hunter2" >&2\necho \'{"error": "no quota left"}\'\nexit 4\n')
    outcome = provision("lustre", spec, volume())
    assert outcome.reason == "its program exited 4: no quota left" and "hunter2" not in outcome.reason
    silent = provision("lustre", program(tmp_path, 'echo "password=hunter2" >&2\nexit 1\n'), volume())
    assert silent.reason == "its program exited 1: (it gave no reason)"


def test_a_program_that_hangs_is_killed_at_its_timeout(tmp_path):
    started = time.monotonic()
    outcome = provision("lustre", program(tmp_path, "sleep 60 & sleep 60\n", timeout=0.5), volume())
    assert "ran past 0.5s and was killed" in outcome.reason and time.monotonic() - started < 10

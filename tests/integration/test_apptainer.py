"""Jobs under `--runtime apptainer`, against the loopback registry's busybox image. apptainer is not packaged in
Debian: these skip, saying so, on machines without it."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from adapters.apptainer import ApptainerRuntime, SifCache
from adapters.executor import Executor, JobUser
from adapters.runtime.images import machine_has
from tests.integration.test_executor import run, spec
from tests.integration.test_isolation_image import MARKER, image  # noqa: F401 - the registry fixture

if machine_has("apptainer"):
    pytest.skip("apptainer is not installed (not in Debian: https://apptainer.org/docs/admin/main/installation.html)",
                allow_module_level=True)


@pytest.fixture
def apptainer_executor():
    root = Path(tempfile.mkdtemp(prefix="roving-apptainer-"))
    root.chmod(0o755)
    program = shutil.which("apptainer") or "apptainer"
    runtime = ApptainerRuntime(SifCache(root / "sif", program), (root / "work").resolve(), program)
    yield Executor(root / "work", kill_grace=0.3, runtime=runtime, user=JobUser(uid=65534, gid=65534, name="nobody"))
    shutil.rmtree(root, ignore_errors=True)


def test_a_job_runs_in_its_image_with_its_env_and_work_directory(image, apptainer_executor):  # noqa: F811
    _, reference = image
    recorder, result = run(apptainer_executor, spec(image=reference, env={"GREETING": "hi"},
                                                    script="cat /etc/roving-test-image; echo $GREETING; echo ok > out"),
                           timeout=120)
    assert result == (0, "exited with code 0"), recorder.text("stderr")
    assert recorder.text().splitlines()[-2:] == [MARKER.strip(), "hi"]
    assert (apptainer_executor.workdir(spec()) / "out").read_text() == "ok\n"


def test_an_isolated_network_has_only_loopback(image, apptainer_executor):  # noqa: F811
    _, reference = image
    recorder, _ = run(apptainer_executor, spec(image=reference, network_isolated=True, command=["cat", "/proc/net/dev"]),
                      timeout=120)
    assert sorted(line.split(":")[0].strip() for line in recorder.text().splitlines()[2:]) == ["lo"]

"""The apptainer runtime: refused at start where apptainer is not installed, the `apptainer exec` line it builds, the
job's env passed through --containall, and its SIF cache (pulled by the agent, the credential never on argv)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from adapters.apptainer import ApptainerRuntime, SifCache, env_in_image
from adapters.registry_auth import parse_credential
from adapters.runtime.registry import ImageError
from api.agent.args import UsageError
from api.agent.main import agent_main
from tests.unit.agent.test_agent_args import ENV, parse

IMAGE = "docker://127.0.0.1:5000/team/app:1"


def test_the_agent_refuses_the_apptainer_runtime_where_it_is_not_installed(monkeypatch, capsys):
    monkeypatch.setattr("api.agent.args.machine_has", lambda *programs: list(programs))
    with pytest.raises(UsageError, match=r"^--runtime apptainer needs apptainer on PATH: install it \(https://"):
        parse("--runtime", "apptainer")
    with pytest.raises(UsageError, match="needs apptainer on PATH"):
        parse(env=ENV | {"ROVING_RUNTIME": "apptainer"})
    monkeypatch.setenv("ROVING_TOKEN", "tok")
    assert agent_main(["--api", "http://127.0.0.1:8080", "--runtime", "apptainer"]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("roving agent: error: --runtime apptainer needs apptainer on PATH: install it")


def test_with_apptainer_installed_the_runtime_is_taken(monkeypatch):
    monkeypatch.setattr("api.agent.args.machine_has", lambda *programs: [])
    assert parse("--runtime", "apptainer").runtime == "apptainer"


def runtime(tmp_path: Path) -> ApptainerRuntime:
    return ApptainerRuntime(SifCache(tmp_path / "sif"), Path("/work"), apptainer="/usr/bin/apptainer")


def test_a_job_runs_contained_without_home_with_its_work_directory_and_volumes_bound(tmp_path):
    command = runtime(tmp_path).wrap(["python", "train.py"], Path("/cache/sif/k.sif"), Path("/work/wf/train-1"),
                                     Path("/work/wf/train-1/src"), isolated_network=False,
                                     mounts={"/data": Path("/work/.volumes/wf/data")})
    assert command == ["/usr/bin/apptainer", "exec", "--containall", "--no-home",
                       "--bind", "/work/wf/train-1:/work/wf/train-1", "--bind", "/work/.volumes/wf/data:/data",
                       "--pwd", "/work/wf/train-1/src", "/cache/sif/k.sif", "python", "train.py"]


def test_an_isolated_network_is_none_and_gpus_bring_the_driver(tmp_path):
    command = runtime(tmp_path).wrap(["true"], Path("/c/k.sif"), Path("/w/j"), Path("/w/j"), isolated_network=True,
                                     gpus=["1"])
    assert command[command.index("--net"):command.index("--pwd")] == ["--net", "--network", "none", "--nv"]


def test_the_jobs_env_goes_in_as_apptainerenv_and_only_for_a_job_in_an_image(tmp_path):
    apptainer = runtime(tmp_path)
    env = {"PATH": "/usr/bin:/bin", "FB_JOB_NAME": "train", "HF_TOKEN": "value"}
    inside = env_in_image(apptainer, object(), env)
    assert inside == {"PATH": "/usr/bin:/bin", "APPTAINERENV_PATH": "/usr/bin:/bin",
                      "APPTAINERENV_FB_JOB_NAME": "train", "APPTAINERENV_HF_TOKEN": "value"}
    assert env_in_image(apptainer, None, env) is env


def test_a_plain_http_registry_is_pulled_with_nohttps(tmp_path):
    cache = SifCache(tmp_path / "sif", apptainer="apptainer", insecure=("reg.lan:5000",))
    target = tmp_path / "x.sif"
    assert cache.pull_command(IMAGE, target) == ["apptainer", "pull", "--disable-cache", "--nohttps", str(target), IMAGE]
    assert "--nohttps" in cache.pull_command("docker://reg.lan:5000/a:1", target)
    assert "--nohttps" not in cache.pull_command("docker://ghcr.io/a/b:1", target)


def test_only_docker_oras_and_library_images_are_run(tmp_path):
    with pytest.raises(ImageError, match="image fuzzball://x: the apptainer runtime runs docker://"):
        SifCache(tmp_path / "sif").rootfs("fuzzball://x")


@pytest.fixture
def fake_apptainer(tmp_path):
    """An `apptainer` that writes a SIF and records its argv and the credential it was given in its env."""
    if shutil.which("sh") is None:
        pytest.skip("no /bin/sh")
    log = tmp_path / "calls"
    script = tmp_path / "apptainer"
    script.write_text(f'#!/bin/sh\necho "argv $*" >> {log}\n'
                      f'echo "env ${{APPTAINER_DOCKER_USERNAME:-}}:${{APPTAINER_DOCKER_PASSWORD:-}}" >> {log}\n'
                      'for last; do :; done\nprev=""\nfor a; do [ "$a" = "$last" ] && break; prev="$a"; done\n'
                      'echo SIF > "$prev"\n')
    script.chmod(0o755)
    return str(script), log


PASSWORD = "hunter2-registry-pw"  # distinct: "pw" alone turned up by chance in a cache path of the argv


def test_a_private_image_is_pulled_by_the_agent_with_the_credential_in_its_env_and_cached_per_credential(
        tmp_path, fake_apptainer):
    program, log = fake_apptainer
    cache = SifCache(tmp_path / "sif", apptainer=program)
    told: list[str] = []
    first = cache.rootfs(IMAGE, parse_credential(f"robot:{PASSWORD}"), told.append)
    assert first.seconds > 0 and first.rootfs.read_text() == "SIF\n" and told == [f"pulling {IMAGE} with apptainer"]
    assert oct(first.rootfs.stat().st_mode & 0o777) == "0o644"  # the job's user reads it
    again = cache.rootfs(IMAGE, parse_credential(f"robot:{PASSWORD}"))
    assert (again.rootfs, again.seconds) == (first.rootfs, 0.0)
    other = cache.rootfs(IMAGE, None)  # no credential: never the private SIF, a pull of its own
    assert other.rootfs != first.rootfs and other.seconds > 0
    calls = log.read_text().splitlines()
    assert [line for line in calls if line.startswith("env")] == [f"env robot:{PASSWORD}", "env :"]
    assert not any(PASSWORD in line for line in calls if line.startswith("argv"))
    assert os.listdir(tmp_path / "sif" / "tmp") == []


def test_a_failed_pull_names_the_image_and_what_apptainer_said(tmp_path):
    script = tmp_path / "apptainer"
    script.write_text('#!/bin/sh\necho "FATAL: Unable to get image: unauthorized: authentication required" >&2\nexit 255\n')
    script.chmod(0o755)
    with pytest.raises(ImageError, match=rf"^image {IMAGE} cannot be pulled: FATAL: .*unauthorized"):
        SifCache(tmp_path / "sif", apptainer=str(script)).rootfs(IMAGE)

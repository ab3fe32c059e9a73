"""The built packages run: the sdist and the wheel carry the UI and ops/, and the wheel installed with its `server`
extra into a fresh virtual environment starts `roving up`, serves the UI and runs a job (no source tree involved)."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import httpx
import pytest

from tests.e2e.stack import LocalStack

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ["api/http/ui/templates/layout.html", "api/http/ui/static/ui.css", "api/http/ui/static/ui.js",
           "roving/ops/prometheus/roving-rules.yml", "roving/ops/alertmanager/alertmanager.yml",
           "roving/ops/grafana/node-health.json", "roving/ops/nats/single.conf", "roving/ops/systemd/roving-api.service"]


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{' '.join(argv)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`python -m build`: the sdist, then the wheel built from that sdist, as a release is made."""
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], timeout=300)
    return out


@pytest.fixture(scope="module")
def installed(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with `roving-<v>-py3-none-any.whl[server]` and nothing else: its bin/ directory."""
    venv = tmp_path_factory.mktemp("venv")
    run([sys.executable, "-m", "venv", str(venv)], timeout=120)
    wheel = next(dist.glob("roving-*-py3-none-any.whl"))
    run([str(venv / "bin" / "pip"), "install", "-q", f"{wheel}[server]"], timeout=600)
    return venv / "bin"


def test_the_sdist_and_the_wheel_carry_what_roving_up_serves_and_deploys(dist: Path):
    sdist = next(dist.glob("roving-*.tar.gz"))
    with tarfile.open(sdist) as archive:
        in_sdist = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    with zipfile.ZipFile(next(dist.glob("*.whl"))) as archive:
        in_wheel = set(archive.namelist())
    assert [name for name in SHIPPED if name not in in_sdist] == []
    assert [name for name in SHIPPED if name not in in_wheel] == []
    assert not [name for name in in_wheel if name.startswith(("roving/ops/bench/", "roving/ops/soak/", "tests/"))]
    # no top-level `ops`: another library's import name (the two would overwrite each other's files)
    assert {name.split("/", 1)[0] for name in in_wheel if "/" in name and ".dist-info/" not in name} == {
        "api", "domain", "adapters", "projections", "roving"}


def test_the_installed_wheel_runs_roving_up_serves_the_ui_and_runs_a_job(installed: Path, tmp_path: Path):
    where = run([str(installed / "python"), "-c", "import api, roving.ops; print(api.__file__, roving.ops.ROOT)"], cwd=tmp_path)
    assert str(ROOT) not in where.stdout and "site-packages" in where.stdout
    stack = LocalStack(tmp_path, nodes=1, command=(str(installed / "roving"), "up"))
    try:
        stack.start(timeout=90)
        assert httpx.get(stack.url + "/readyz", timeout=10).status_code == 200
        ui = httpx.get(stack.url + "/ui/", timeout=10, follow_redirects=True)
        assert ui.status_code == 200 and "<html" in ui.text.lower()
        assert httpx.get(stack.url + "/ui/static/ui.css", timeout=10).status_code == 200
        assert httpx.get(stack.url + "/v4/docs/static/swagger-ui-bundle.js", timeout=10).status_code == 200
        assert httpx.get(stack.url + "/v4/version", timeout=10).json()["version"] != "0+unknown"
        job = ("version: v4\njobs:\n  hi:\n    image: {uri: docker://alpine:3.20}\n    command: [echo, hi]\n"
               "    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}\n")
        workflow = stack.submit(job, name="from-the-wheel")
        assert stack.wait_status(workflow, ("FINISHED", "FAILED"), timeout=60)["status"] == "FINISHED"
    finally:
        stack.stop()

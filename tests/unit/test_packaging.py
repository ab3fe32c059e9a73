"""What an installer gets: the Apache-2.0 licence, ops/ and examples/ in the sdist, bounded format-bearing deps
(tests/e2e/test_wheel.py builds and installs the packages themselves)."""

import re
import tomllib
from pathlib import Path

from setuptools._distutils.filelist import FileList

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def sdist_files(monkeypatch) -> set[str]:
    """The files MANIFEST.in adds to the sdist, applied as setuptools applies it."""
    monkeypatch.chdir(ROOT)
    found = FileList()
    found.findall(".")
    found.files = [name.removeprefix("./") for name in found.allfiles]
    chosen = FileList()
    chosen.allfiles = found.files
    for line in (ROOT / "MANIFEST.in").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            chosen.process_template_line(line)
    return set(chosen.files)


def test_the_project_is_apache_2_licensed_with_the_licence_text_shipped():
    assert PROJECT["license"] == "Apache-2.0" and PROJECT["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text


def test_the_sdist_ships_the_monitoring_configs_and_the_examples(monkeypatch):
    files = sdist_files(monkeypatch)
    wanted = {"LICENSE", "ops/prometheus/roving-rules.yml", "ops/alertmanager/alertmanager.yml",
              "ops/grafana/node-health.json", "ops/systemd/roving-api.service", "examples/hello.yaml"}
    assert wanted <= files
    assert not [name for name in files if "__pycache__" in name]


def test_dependencies_whose_formats_the_code_relies_on_have_an_upper_bound():
    wanted = PROJECT["dependencies"] + PROJECT["optional-dependencies"]["server"]
    bounds = {re.split(r"[<>=!~\[; ]", d)[0]: d for d in wanted}
    bounded = ("msgspec", "uvicorn", "httpx", "starlette", "structlog", "prometheus-client", "pyyaml", "httptools")
    assert [name for name in bounded if "<" not in bounds[name]] == []


def test_the_server_extra_names_every_library_the_control_plane_imports_at_start():
    server = {re.split(r"[<>=!~\[; ]", d)[0] for d in PROJECT["optional-dependencies"]["server"]}
    assert {"cryptography", "eventsourcing", "starlette", "uvicorn", "structlog", "prometheus-client"} <= server


def test_the_wheel_installs_the_operator_files_under_roving_not_as_a_top_level_ops_package():
    """`ops` is also the import name of Canonical's charm framework: one environment with both would have one
    package's files overwrite the other's."""
    from setuptools import find_packages

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    packages = find_packages(str(ROOT), include=config["packages"]["find"]["include"])
    assert "ops" not in {name.split(".")[0] for name in packages}
    assert "roving.ops" in packages and "roving.ops.soak" not in packages
    assert "prometheus/*.yml" in config["package-data"]["roving.ops"]
    import roving.ops
    from adapters.monitoring_config import SHIPPED_RULES

    assert SHIPPED_RULES == roving.ops.ROOT / "prometheus" / "roving-rules.yml" and SHIPPED_RULES.is_file()

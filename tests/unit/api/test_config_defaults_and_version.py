"""`roving --version` answers, and the central configuration shows the defaults of the keys nobody set."""

import pytest

from api.cli.main import build_parser, version
from tests.unit.api.harness import Api


def test_version_prints_the_installed_version(capsys):
    with pytest.raises(SystemExit) as finished:
        build_parser().parse_args(["--version"])
    assert finished.value.code == 0
    assert capsys.readouterr().out.strip() == f"roving {version()}"
    assert version()[0].isdigit()


def test_config_shows_unset_keys_with_their_defaults_apart_from_what_was_set():
    api = Api()
    before = api.request("GET", "/v4/admin/centralconfig", api.admin).json()
    assert before["settings"] == {}
    assert before["defaults"]["nodeHealth.maxMonitoringHeldPercent"] == 20.0
    assert before["defaults"]["scheduler.interval"] == 30.0
    changed = api.request("PUT", "/v4/admin/centralconfig", api.admin, json={"nodeHealth.maxMonitoringHeldPercent": 50})
    assert changed.json()["settings"] == {"nodeHealth.maxMonitoringHeldPercent": 50}
    assert "nodeHealth.maxMonitoringHeldPercent" not in changed.json()["defaults"]
    assert "scheduler.interval" in changed.json()["defaults"]

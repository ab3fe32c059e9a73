"""`roving up --monitoring`: the configs it writes are valid for the real tools, and missing binaries are named."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from adapters.monitoring import MonitoringError, find_binaries
from adapters.monitoring_config import SHIPPED_RULES, MonitoringPlan, duration
from api.up.main import up_main

PLAN = MonitoringPlan(api="http://127.0.0.1:8080", token_file=Path("/data/alertmanager.token"), alertmanager_port=9093,
                      interval=0.5)


def test_missing_binaries_are_named_with_the_packages_to_install(tmp_path: Path):
    with pytest.raises(MonitoringError) as caught:
        find_binaries({"PATH": str(tmp_path)})
    message = str(caught.value)
    assert "prometheus (or ROVING_PROMETHEUS) and prometheus-alertmanager (or ROVING_ALERTMANAGER)" in message
    assert "apt-get install prometheus prometheus-alertmanager" in message


def test_roving_up_monitoring_refuses_to_start_without_the_binaries(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("ROVING_PROMETHEUS", raising=False)
    monkeypatch.delenv("ROVING_ALERTMANAGER", raising=False)
    monkeypatch.setenv("ROVING_DATA_DIR", str(tmp_path / "data"))
    assert up_main(["--monitoring"]) == 1
    assert "apt-get install prometheus prometheus-alertmanager" in capsys.readouterr().err
    assert not (tmp_path / "data").exists()  # nothing was started


def test_nodes_are_discovered_from_roving_with_the_webhook_token():
    config = json.loads(PLAN.prometheus())
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    [discovery] = jobs["roving-nodes"]["http_sd_configs"]
    assert discovery["url"] == "http://127.0.0.1:8080/v4/nodes/-/sd_config"
    assert discovery["authorization"] == {"type": "Bearer", "credentials_file": "/data/alertmanager.token"}
    assert jobs["node"]["relabel_configs"][0]["replacement"] == "${1}:9100"
    assert config["rule_files"] == [str(SHIPPED_RULES)]
    assert config["global"]["scrape_interval"] == config["global"]["evaluation_interval"] == "500ms"


def test_autoscaled_replicas_are_discovered_with_the_webhook_token_and_cannot_claim_rovings_labels():
    jobs = {job["job_name"]: job for job in json.loads(PLAN.prometheus())["scrape_configs"]}
    replicas = jobs["roving-replicas"]
    [discovery] = replicas["http_sd_configs"]
    assert discovery["url"] == "http://127.0.0.1:8080/v4/endpoints/-/sd_config"
    assert discovery["authorization"] == {"type": "Bearer", "credentials_file": "/data/alertmanager.token"}
    assert replicas["honor_labels"] is False and replicas["sample_limit"] == 10_000


def test_the_shipped_cluster_config_scrapes_replicas_as_roving_up_does():
    import yaml

    from adapters.monitoring_config import replicas_job
    from roving.ops import ROOT

    shipped = yaml.safe_load((ROOT / "prometheus" / "prometheus.yml").read_text())
    [job] = [j for j in shipped["scrape_configs"] if j["job_name"] == "roving-replicas"]
    [discovery] = job.pop("http_sd_configs")
    assert discovery["url"].endswith("/v4/endpoints/-/sd_config")
    assert job == {k: v for k, v in replicas_job({}).items() if k != "http_sd_configs"}


def test_the_node_down_rule_watches_the_job_the_config_scrapes_agents_in():
    jobs = {job["job_name"] for job in json.loads(PLAN.prometheus())["scrape_configs"]}
    watched = set(re.findall(r'up\{job="([^"]+)"\}', SHIPPED_RULES.read_text()))
    assert watched and watched <= jobs


def test_without_a_node_exporter_port_there_is_no_node_job():
    plan = MonitoringPlan(api="http://h:1", token_file=Path("/t"), alertmanager_port=1, node_exporter_port=0)
    assert [job["job_name"] for job in json.loads(plan.prometheus())["scrape_configs"]] == ["roving", "roving-nodes",
                                                                                      "roving-replicas"]


def test_alerts_that_carry_fb_action_go_to_the_webhook_resolved_ones_too():
    config = json.loads(PLAN.alertmanager())
    [route] = config["route"]["routes"]
    assert route["receiver"] == "roving" and route["matchers"] == ['fb_action=~"cordon|evict|deprovision"']
    assert (route["group_wait"], route["group_interval"]) == ("500ms", "2000ms")
    [webhook] = next(r for r in config["receivers"] if r["name"] == "roving")["webhook_configs"]
    assert webhook["url"] == "http://127.0.0.1:8080/v4/alerts" and webhook["send_resolved"] is True


def test_durations_are_whole_milliseconds():
    assert (duration(15), duration(0.25), duration(0.0001)) == ("15000ms", "250ms", "1ms")


@pytest.mark.skipif(not shutil.which("promtool"), reason="promtool missing: apt-get install prometheus")
def test_promtool_accepts_the_prometheus_config_and_the_shipped_rules(tmp_path: Path):
    token = tmp_path / "alertmanager.token"
    token.write_text("t\n")
    plan = MonitoringPlan(api="http://127.0.0.1:8080", token_file=token, alertmanager_port=9093)
    (tmp_path / "prometheus.yml").write_text(plan.prometheus())
    done = subprocess.run(["promtool", "check", "config", str(tmp_path / "prometheus.yml")], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.skipif(not shutil.which("amtool"), reason="amtool missing: apt-get install prometheus-alertmanager")
def test_amtool_accepts_the_alertmanager_config(tmp_path: Path):
    token = tmp_path / "alertmanager.token"
    token.write_text("t\n")
    plan = MonitoringPlan(api="http://127.0.0.1:8080", token_file=token, alertmanager_port=9093)
    (tmp_path / "alertmanager.yml").write_text(plan.alertmanager())
    done = subprocess.run(["amtool", "check-config", str(tmp_path / "alertmanager.yml")], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout + done.stderr

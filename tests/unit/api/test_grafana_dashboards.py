"""The three shipped Grafana dashboards load, have their uids and variables, and they and the shipped rules query
only series that exist: Roving's own, the node exporter's and the DCGM exporter's, or Prometheus' `up` and `ALERTS`."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from prometheus_client import generate_latest

from api.agent.metrics import NodeMetrics
from tests.unit.api.harness import Api
from tests.unit.api.test_metrics_agree_with_ops import exported

GRAFANA = Path(__file__).resolve().parents[3] / "ops" / "grafana"
UIDS = {"fleet-health.json": "roving-fleet-health", "node-health.json": "roving-node-health",
        "node-resources.json": "roving-node-resources"}
PROMETHEUS = {"up", "ALERTS"}
NODE_EXPORTER = {
    "node_load1", "node_load15", "node_procs_running", "node_cpu_seconds_total", "node_vmstat_pswpin",
    "node_vmstat_pswpout", "node_disk_read_bytes_total", "node_disk_written_bytes_total",
    "node_filesystem_avail_bytes", "node_filesystem_readonly", "node_filesystem_device_error",
    "node_memory_SwapFree_bytes", "node_memory_MemAvailable_bytes", "node_edac_correctable_errors_total",
    "node_edac_uncorrectable_errors_total",
}
DCGM = {"DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_UTIL"}
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset",
            "inf", "nan"}
STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
MATCHERS = re.compile(r"\{[^}]*\}|\[[^\]]*\]")
GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
NAMES = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")


def metric_names(expr: str) -> set[str]:
    """The series a PromQL expression reads: identifiers that are neither functions, keywords nor labels."""
    bare = GROUPING.sub(" ", MATCHERS.sub(" ", STRINGS.sub('""', expr)))
    return {m.group() for m in NAMES.finditer(bare)
            if m.group().lower() not in KEYWORDS and not bare[m.end():].lstrip().startswith("(")
            and not (m.start() > 0 and bare[m.start() - 1].isdigit())}


def load(name: str) -> dict:
    return json.loads((GRAFANA / name).read_text())


def expressions(dashboard: dict) -> list[str]:
    targets = [t["expr"] for panel in dashboard["panels"] for t in panel.get("targets", [])]
    queries = [v["definition"].removeprefix("label_values(").rsplit(",", 1)[0]
               for v in dashboard["templating"]["list"] if v["type"] == "query"]
    return targets + queries


@pytest.fixture(scope="module")
def roving_series() -> set[str]:
    api = Api()
    api.request("GET", "/metrics")  # counted after it answers: the second scrape shows the request counters
    control_plane = api.request("GET", "/metrics").text
    return exported(control_plane) | exported(generate_latest(NodeMetrics().registry).decode())


def test_metric_names_are_read_from_promql_without_functions_labels_or_keywords():
    expr = 'sum by (node) (rate(a_total{mode="idle", node=~"$node"}[1m]) + b_bytes) / 1024 or vector(0)'
    assert metric_names(expr) == {"a_total", "b_bytes"}


@pytest.mark.parametrize("name", sorted(UIDS))
def test_each_dashboard_has_its_uid_a_datasource_variable_and_defines_the_variables_it_uses(name):
    dashboard = load(name)
    assert dashboard["uid"] == UIDS[name] and dashboard["title"].startswith("Roving: ")
    variables = {v["name"] for v in dashboard["templating"]["list"]}
    assert "datasource" in variables
    used = {m for expr in expressions(dashboard) for m in re.findall(r"\$(\w+)", expr)}
    assert used <= variables
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))


def test_the_node_dashboards_choose_nodes_by_definition():
    for name in ("node-health.json", "node-resources.json"):
        variables = {v["name"]: v for v in load(name)["templating"]["list"]}
        assert "$definition" in variables["node"]["definition"]


def test_node_resources_shows_the_lsload_load_indices():
    [table] = [p for p in load("node-resources.json")["panels"] if p["title"].startswith("lsload")]
    shown = [prop["value"] for o in table["fieldConfig"]["overrides"] for prop in o["properties"]
             if prop["id"] == "displayName"]
    assert shown == ["r15s", "r1m", "r15m", "ut", "pg", "io", "tmp", "swp", "mem"]


@pytest.mark.parametrize("name", sorted(UIDS))
def test_every_series_a_dashboard_queries_is_exported_by_roving_or_a_standard_exporter(name, roving_series):
    queried = {metric for expr in expressions(load(name)) for metric in metric_names(expr)}
    assert queried
    assert sorted(queried - roving_series - NODE_EXPORTER - DCGM - PROMETHEUS) == []


@pytest.mark.skipif(not shutil.which("promtool"), reason="promtool missing: apt-get install prometheus")
def test_every_dashboard_query_is_valid_promql(tmp_path: Path):
    exprs = [re.sub(r"\$\w+", ".*", e) for name in UIDS for e in expressions(load(name)) if "label_values" not in e]
    rules = {"groups": [{"name": "dashboards", "rules": [{"record": f"dashboard:q{i}", "expr": e}
                                                         for i, e in enumerate(exprs)]}]}
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(rules))
    done = subprocess.run(["promtool", "check", "rules", str(tmp_path / "rules.yml")], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_series_the_shipped_rules_query_is_exported_by_roving_or_a_standard_exporter(roving_series):
    groups = yaml.safe_load((GRAFANA.parent / "prometheus" / "roving-rules.yml").read_text())["groups"]
    queried = {metric for group in groups for rule in group["rules"] for metric in metric_names(rule["expr"])}
    assert {"roving_node_disk_errors", "DCGM_FI_DEV_XID_ERRORS", "roving_node_hold_ceiling_reached"} <= queried
    assert sorted(queried - roving_series - NODE_EXPORTER - DCGM - PROMETHEUS) == []

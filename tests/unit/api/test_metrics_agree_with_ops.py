"""Every series the shipped alert rules and Grafana dashboard query is one Roving exports, and the gauges move."""

import json
import re
from pathlib import Path

import pytest
import yaml
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from api.agent.metrics import NodeMetrics
from domain.tenancy import Role, Source
from tests.unit.api.harness import Api, token

OPS = Path(__file__).resolve().parents[3] / "ops"
SERIES = re.compile(r"\broving_[a-z0-9_]+")
AGENT = token("agent", Role.USER, source=Source.AGENT)


def rule_expressions() -> list[str]:
    groups = yaml.safe_load((OPS / "prometheus" / "roving-rules.yml").read_text())["groups"]
    return [rule["expr"] for group in groups for rule in group["rules"]]


def dashboard_expressions() -> list[str]:
    found = []
    for path in (OPS / "grafana").glob("*.json"):
        panels = json.loads(path.read_text())["panels"]
        found += [target["expr"] for panel in panels for target in panel.get("targets", [])]
    return found


def exported(text: str) -> set[str]:
    """Sample names, and the names of labelled families that have no children yet (no nodes, no definitions)."""
    families = list(text_string_to_metric_families(text))
    childless = {f.name: f.type for f in families if not f.samples}
    return ({s.name for f in families for s in f.samples} | {n for n, t in childless.items() if t == "gauge"}
            | {f"{n}_total" for n, t in childless.items() if t == "counter"})


def samples(text: str, name: str) -> dict[tuple, float]:
    return {tuple(sorted(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples if s.name == name}


@pytest.fixture(scope="module")
def api():
    return Api()


def test_every_series_the_rules_and_dashboards_query_is_exported(api):
    names = exported(api.request("GET", "/metrics").text) | exported(generate_latest(NodeMetrics().registry).decode())
    queried = {name for expr in rule_expressions() + dashboard_expressions() for name in SERIES.findall(expr)}
    assert queried, "the rules and dashboards query no roving series"
    assert sorted(queried - names) == []


def test_the_gauges_show_nodes_by_status_and_queue_depth_by_state(api):
    register = {"name": "g1", "cpu": 2, "memory": 2**30, "devices": {}, "annotations": {}, "definition": "gauges",
                "address": "127.0.0.1", "metrics_port": None}
    assert api.request("POST", "/v4/agent/register", AGENT, json=register).status_code == 200
    assert api.request("POST", "/v4/nodes/g1/cordon", api.admin, json={"reason": "bios"}).status_code == 201
    text = api.request("GET", "/metrics").text
    assert samples(text, "roving_nodes")[(("status", "READY"),)] >= 1
    assert samples(text, "roving_nodes_held")[(("effect", "cordon"), ("source", "admin"))] >= 1
    assert (("state", "PENDING"),) in samples(text, "roving_queue_allocations")
    # one node, 20% by default: monitoring may hold none of it, and the gauge says so
    assert samples(text, "roving_node_hold_ceiling_reached")[(("definition", "gauges"),)] == 1

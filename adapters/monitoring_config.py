"""The Prometheus and Alertmanager configs `roving up --monitoring` writes: scrape the control plane and every
live agent (HTTP service discovery from Roving), evaluate the shipped rules, route fb_action alerts to /v4/alerts.

Both are written as JSON, which is YAML, so no value ever needs quoting rules of its own."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from domain.promql import TENANT_PREFIX
from roving.ops import ROOT as OPERATOR_FILES

SHIPPED_RULES = OPERATOR_FILES / "prometheus" / "roving-rules.yml"  # package data: in a source tree and a wheel alike
ACTIONS = "cordon|evict|deprovision"


def duration(seconds: float) -> str:
    """Prometheus' and Alertmanager's duration syntax; whole milliseconds, so 0.5 s is `500ms`."""
    return f"{max(1, round(seconds * 1000))}ms"


@dataclass(frozen=True)
class MonitoringPlan:
    """What both configs are made from: where Roving answers, the webhook token's file, and the pace."""

    api: str  # http://host:port of the control plane, as Prometheus and Alertmanager reach it
    token_file: Path  # <data dir>/alertmanager.token: opens /v4/alerts and /v4/nodes/-/sd_config
    alertmanager_port: int
    interval: float = 15.0  # scrape, rule evaluation, discovery refresh and Alertmanager's group wait
    rules: tuple[Path, ...] = (SHIPPED_RULES,)
    node_exporter_port: int = 9100  # 0: the nodes run no node exporter, no job for it

    def prometheus(self) -> str:
        pace = duration(self.interval)
        host_port = self.api.split("://", 1)[-1]
        discovery = {"url": f"{self.api}/v4/nodes/-/sd_config", "refresh_interval": pace,
                     "authorization": {"type": "Bearer", "credentials_file": str(self.token_file)}}
        jobs = [{"job_name": "roving", "static_configs": [{"targets": [host_port]}]},
                {"job_name": "roving-nodes", "http_sd_configs": [discovery]}]
        jobs.append(replicas_job(discovery | {"url": f"{self.api}/v4/endpoints/-/sd_config"}))
        if self.node_exporter_port:
            # the same discovered nodes, at the node exporter's port: lsload-style load indices and disk state
            port = {"source_labels": ["__address__"], "regex": "(.+):\\d+", "target_label": "__address__",
                    "replacement": f"${{1}}:{self.node_exporter_port}"}
            jobs.append({"job_name": "node", "http_sd_configs": [discovery], "relabel_configs": [port]})
        config = {
            "global": {"scrape_interval": pace, "evaluation_interval": pace, "scrape_timeout": pace},
            "rule_files": [str(path) for path in self.rules],
            "scrape_configs": jobs,
            "alerting": {"alertmanagers": [{"static_configs": [{"targets": [f"127.0.0.1:{self.alertmanager_port}"]}]}]},
        }
        return json.dumps(config, indent=1) + "\n"

    def alertmanager(self) -> str:
        """fb_action alerts go to Roving, grouped per node and alert, resolved ones too (they release holds)."""
        roving = {"matchers": [f'fb_action=~"{ACTIONS}"'], "receiver": "roving", "group_by": ["node", "alertname"],
                  "group_wait": duration(self.interval), "group_interval": duration(4 * self.interval),
                  "repeat_interval": "1h"}
        webhook = {"url": f"{self.api}/v4/alerts", "send_resolved": True,
                   "http_config": {"authorization": {"type": "Bearer", "credentials_file": str(self.token_file)}}}
        config = {"route": {"receiver": "default", "routes": [roving]},
                  "receivers": [{"name": "default"}, {"name": "roving", "webhook_configs": [webhook]}]}
        return json.dumps(config, indent=1) + "\n"


def replicas_job(discovery: dict[str, Any]) -> dict[str, Any]:
    """Autoscaled replicas' own /metrics, for their autoscaler's queries. Tenants' exporters are not trusted: a
    series claiming Roving's labels keeps them only as `exported_...` (honor_labels off), every series is renamed
    under TENANT_PREFIX (so none is one the cluster's rules or dashboards read), and a scrape is bounded."""
    rename = {"source_labels": ["__name__"], "regex": "(.+)", "target_label": "__name__",
              "replacement": f"{TENANT_PREFIX}${{1}}"}
    return {"job_name": "roving-replicas", "http_sd_configs": [discovery], "honor_labels": False,
            "metric_relabel_configs": [rename], "sample_limit": 10_000, "body_size_limit": "4MB"}

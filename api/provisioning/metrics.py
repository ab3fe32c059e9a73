"""Provisioning metrics: nodes asked for, failures by kind, provision latency, and nodes by request state."""

from __future__ import annotations

from typing import Any

from prometheus_client import Counter, Gauge, Histogram

REQUESTS = Counter("roving_provisioner_requests_total", "Nodes the scheduler asked provisioners for", ["provisioner"])
FAILURES = Counter("roving_provisioner_failures_total",
                   "Provider calls that failed and nodes that never came up or were lost, by kind "
                   "(create, boot_timeout, lost, delete, stray)", ["provisioner", "kind"])
LATENCY = Histogram("roving_provisioner_provision_seconds", "From a node's request to its node READY",
                    ["provisioner"], buckets=(1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800))
NODES = Gauge("roving_provisioner_nodes", "Provisioned nodes by provisioner and request state", ["provisioner", "state"])


def observe(views: Any) -> None:
    """Set the nodes gauge from the provisioners view just before a scrape."""
    NODES.clear()
    for p in views.provisioners.all(include_deleted=True):
        counts: dict[str, int] = {}
        for request in p.requests.values():
            counts[request.state.value] = counts.get(request.state.value, 0) + 1
        for state, count in counts.items():
            NODES.labels(p.name, state).set(count)

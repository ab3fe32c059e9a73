"""The node's own Prometheus metrics, served on the agent's --metrics-port."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Gauge

from adapters import sysinfo


class NodeMetrics:
    """The node's Prometheus metrics on a registry of its own. Failures carry their cause: `start` (the node
    could not start the work: its fault, what the job-failure rule counts) or `exit` (the job exited non-zero)."""

    def __init__(self, sys_root: Path = Path("/sys")) -> None:
        self.sys_root = sys_root
        self.registry = CollectorRegistry()
        self.running = Gauge("roving_node_running_allocations", "Allocations running on this node", registry=self.registry)
        self.failures = Counter("roving_node_job_failures", "Stage attempts that failed on this node, by cause",
                                ["cause"], registry=self.registry)
        for cause in ("start", "exit"):
            self.failures.labels(cause)
        self.disk_errors = Gauge("roving_node_disk_errors", "Block device I/O errors since boot", registry=self.registry)
        self.memory_errors = Gauge("roving_node_memory_errors", "EDAC memory errors since boot", registry=self.registry)

    def refresh(self, running: int) -> None:
        counters = sysinfo.error_counters(self.sys_root)
        self.running.set(running)
        self.disk_errors.set(counters.disk_errors)
        self.memory_errors.set(counters.memory_errors)

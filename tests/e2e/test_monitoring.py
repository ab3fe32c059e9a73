"""`roving up --monitoring`: a node's disk errors fire the shipped rule, Alertmanager posts, the node is held;
the counter is cleared, the alert resolves, the hold goes. Prometheus and Alertmanager die with `roving up`."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from adapters.monitoring import MonitoringError, find_binaries
from adapters.nats_owner import cmdline
from tests.e2e.stack import LocalStack


def _missing() -> str:
    try:
        find_binaries()
    except MonitoringError as error:
        return str(error)
    return ""


pytestmark = pytest.mark.skipif(bool(_missing()), reason=_missing())


@pytest.fixture(scope="module")
def sys_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sysfs tree the node's agent reads its error counters from (ROVING_SYS_ROOT), as the kernel lays it out."""
    root = tmp_path_factory.mktemp("sys")
    (root / "block/sda/device").mkdir(parents=True)
    (root / "block/sda/device/ioerr_cnt").write_text("0x0\n")
    return root


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, sys_root: Path):
    settings = {"ROVING_SYS_ROOT": str(sys_root), "ROVING_MONITORING_INTERVAL": "1s", "ROVING_NODE_EXPORTER_PORT": "0"}
    running = LocalStack(tmp_path_factory.mktemp("roving"), nodes=1, settings=settings, args=("--monitoring",)).start()
    yield running
    running.stop()


def monitoring_holds(stack: LocalStack) -> list[dict]:
    row = next(n for n in stack.client.get("/v4/nodes").json()["nodes"] if n["name"] == "local-1")
    return [h for h in row["holds"] if h["source"] == "monitoring"]


def daemons(data_dir: Path) -> list[int]:
    """Processes whose command line names this stack's monitoring directory: its Prometheus and Alertmanager."""
    marker = str((data_dir / "monitoring").resolve())
    return [int(p.name) for p in Path("/proc").iterdir()
            if p.name.isdigit() and any(marker in arg for arg in cmdline(int(p.name)))]


def test_disk_errors_on_a_node_hold_it_until_the_counter_is_cleared(stack, sys_root):
    # one node: the default ceiling (20% of a definition) would refuse monitoring any hold on it
    answer = stack.client.put("/v4/admin/centralconfig", json={"nodeHealth.maxMonitoringHeldPercent": 100})
    assert answer.status_code == 200, answer.text
    counter = sys_root / "block/sda/device/ioerr_cnt"
    started = time.monotonic()
    counter.write_text("0x3\n")
    stack.wait(lambda: monitoring_holds(stack), 40, "the disk-error alert to hold local-1")
    [hold] = monitoring_holds(stack)
    assert hold["effect"] == "cordon" and hold["by"] == "alertmanager"
    assert hold["reason"] == "3 block device I/O errors on local-1"
    held = time.monotonic() - started
    counter.write_text("0x0\n")
    stack.wait(lambda: not monitoring_holds(stack), 40, "the resolved alert to release local-1's hold")
    print(f"held after {held:.1f}s, released {time.monotonic() - started - held:.1f}s after the counter cleared")


def test_prometheus_and_alertmanager_die_with_a_killed_roving_up(stack):
    assert len(daemons(stack.data_dir)) == 2
    os.kill(stack.process.pid, signal.SIGKILL)
    stack.process.wait()
    stack.wait(lambda: not daemons(stack.data_dir), 15, "prometheus and alertmanager to go with roving up")

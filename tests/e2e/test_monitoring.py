"""`roving up --monitoring` on the default stack (two local nodes, the default 20% ceiling), with the real Prometheus
and Alertmanager: disk errors fire the shipped rule on both nodes, Alertmanager posts, the ceiling lets monitoring
hold one node and refuses the other; raising the ceiling places the refused hold within seconds (Alertmanager
would repeat only after an hour); the counter is cleared, the alerts resolve, the holds go. Prometheus and
Alertmanager die with `roving up`."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import httpx
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
    running = LocalStack(tmp_path_factory.mktemp("roving"), nodes=2, settings=settings, args=("--monitoring",)).start()
    yield running
    running.stop()


def monitoring_holds(stack: LocalStack) -> dict[str, list[dict]]:
    """Each node's monitoring holds, by node name."""
    return {n["name"]: [h for h in n["holds"] if h["source"] == "monitoring"]
            for n in stack.client.get("/v4/nodes").json()["nodes"]}


def held(stack: LocalStack) -> list[str]:
    return sorted(name for name, holds in monitoring_holds(stack).items() if holds)


def daemons(data_dir: Path) -> list[int]:
    """Processes whose command line names this stack's monitoring directory: its Prometheus and Alertmanager."""
    marker = str((data_dir / "monitoring").resolve())
    return [int(p.name) for p in Path("/proc").iterdir()
            if p.name.isdigit() and any(marker in arg for arg in cmdline(int(p.name)))]


def test_disk_errors_hold_one_node_of_two_then_both_once_the_ceiling_is_raised_until_the_counter_is_cleared(
        stack, sys_root):
    counter = sys_root / "block/sda/device/ioerr_cnt"  # both local agents read this tree
    started = time.monotonic()
    counter.write_text("0x3\n")
    stack.wait(lambda: len(held(stack)) == 1, 60, "the disk-error alert to hold one node (the default ceiling)")
    [first] = held(stack)
    [hold] = monitoring_holds(stack)[first]
    assert hold["effect"] == "cordon" and hold["by"] == "alertmanager"
    assert hold["reason"] == f"3 block device I/O errors on {first}"
    held_after = time.monotonic() - started
    stack.wait(lambda: refused(stack) > 0, 30, "the second hold's refusal")
    assert held(stack) == [first]  # the ceiling refused the other node's hold
    answer = stack.client.put("/v4/admin/centralconfig", json={"nodeHealth.maxMonitoringHeldPercent": 100})
    assert answer.status_code == 200, answer.text
    raised = time.monotonic()
    stack.wait(lambda: held(stack) == ["local-1", "local-2"], 15, "the refused hold to be placed under the new ceiling")
    reapplied = time.monotonic() - raised
    counter.write_text("0x0\n")
    cleared = time.monotonic()
    stack.wait(lambda: held(stack) == [], 60, "the resolved alerts to release both holds")
    print(f"held after {held_after:.1f}s, the refused hold placed {reapplied:.1f}s after the ceiling was raised, "
          f"released {time.monotonic() - cleared:.1f}s after the counter cleared")


def refused(stack: LocalStack) -> float:
    text = stack.client.get("/metrics").text
    return sum(float(line.split()[-1]) for line in text.splitlines()
               if line.startswith("roving_monitoring_holds_refused_total"))


def test_the_admin_dashboard_charts_history_from_prometheus(stack):
    password = (stack.data_dir / "admin.password").read_text().strip()
    with httpx.Client(base_url=stack.url, timeout=30) as people:
        assert people.post("/ui/login", data={"username": "admin", "password": password}).status_code == 303
        page = people.get("/ui/").text
    assert "From Prometheus." in page and 'id="chart-queue"' in page and 'id="chart-cpu"' in page


def test_prometheus_and_alertmanager_die_with_a_killed_roving_up(stack):
    assert len(daemons(stack.data_dir)) == 2
    os.kill(stack.process.pid, signal.SIGKILL)
    stack.process.wait()
    stack.wait(lambda: not daemons(stack.data_dir), 15, "prometheus and alertmanager to go with roving up")

"""A short seeded soak on three nats-servers (`--nats-cluster 3`, about 70 s): servers killed -9 and started again,
and the API worker leading the scheduler killed, under load; it must end with zero violations."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SEED = 2  # its 40 s plan kills -9 a server three times and the scheduler's leader once


@pytest.mark.timeout(600)
def test_a_short_soak_on_a_three_server_cluster_losing_servers_and_the_leader_ends_with_no_violation():
    done = subprocess.run([sys.executable, "-m", "ops.soak", "--nats-cluster", "3", "--seed", str(SEED),
                           "--duration", "40", "--faults", "server,leader", "--workers", "2", "--nodes", "2",
                           "--settle", "90"], cwd=REPO, capture_output=True, text=True, timeout=550)
    lines = done.stdout.strip().splitlines()
    assert lines, f"no summary line; stderr tail:\n{done.stderr[-4000:]}"
    summary = json.loads(lines[-1])
    assert summary["faults"].get("server", 0) >= 2 and summary["faults"].get("leader", 0) >= 1, summary
    assert summary["workflows"] > 0 and summary["violations"] == {}, f"{json.dumps(summary)}\n{done.stderr[-6000:]}"

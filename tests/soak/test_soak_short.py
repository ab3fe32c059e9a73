"""A short seeded soak (about 2 minutes, every fault kind) on the real stack: it must end with zero violations."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SEED = 133  # its 100 s plan fires every fault kind: stop, evict, cordon, drain, alert, agent, control, nats,
# freeze and diskfull (as root; otherwise diskfull is counted as skipped)


@pytest.mark.timeout(900)
def test_a_short_soak_with_every_fault_ends_with_no_violation():
    done = subprocess.run([sys.executable, "-m", "ops.soak", "--seed", str(SEED), "--duration", "100",
                           "--faults", "all", "--workers", "3", "--settle", "150"],
                          cwd=REPO, capture_output=True, text=True, timeout=850)
    lines = done.stdout.strip().splitlines()
    assert lines, f"no summary line; stderr tail:\n{done.stderr[-4000:]}"
    summary = json.loads(lines[-1])
    assert summary["workflows"] > 0 and sum(summary["faults"].values()) > 0, summary
    assert summary["violations"] == {}, f"{json.dumps(summary)}\n{done.stderr[-6000:]}"

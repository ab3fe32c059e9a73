"""A seeded soak with provisioners (about 4 minutes, every fault kind, provisioned nodes killed and creates failed):
it must end with zero violations, and its provisioners must really have made, lost and failed nodes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SEED = 5  # its 120 s plan fires every fault kind, provkill and provfail included


@pytest.mark.timeout(900)
def test_a_soak_with_provisioners_and_every_fault_ends_with_no_violation():
    done = subprocess.run([sys.executable, "-m", "ops.soak", "--seed", str(SEED), "--duration", "120", "--faults", "all",
                           "--provision", "--workers", "3", "--settle", "150"],
                          cwd=REPO, capture_output=True, text=True, timeout=850)
    lines = done.stdout.strip().splitlines()
    assert lines, f"no summary line; stderr tail:\n{done.stderr[-4000:]}"
    summary = json.loads(lines[-1])
    assert summary["violations"] == {}, f"{json.dumps(summary)}\n{done.stderr[-6000:]}"
    made = summary["provisioning"]
    assert made["up"] > 0 and made["deleted"] == made["up"], summary
    assert summary["faults"].get("provkill", 0) > 0 and summary["faults"].get("provfail", 0) > 0, summary

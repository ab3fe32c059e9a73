"""Liveness probes: a service is watched for as long as it runs; a hang (failures in a row) is reported once."""

from __future__ import annotations

import threading
import time

from adapters.probes import liveness
from tests.unit.agent.test_probes import probe


def test_a_passing_service_is_watched_past_any_success_threshold_and_a_later_hang_is_reported(tmp_path):
    healthy = tmp_path / "healthy"
    healthy.touch()
    hung: list[str] = []
    done = threading.Event()
    runner = liveness(probe(exec={"command": ["test", "-f", str(healthy)]}, period_seconds=0.02,
                            failure_threshold=3), lambda why: (hung.append(why), done.set())).start()
    time.sleep(0.2)  # ten passes: a readiness runner would have stopped at the first
    assert hung == []
    healthy.unlink()
    assert done.wait(5)
    runner.stop()
    assert hung == ["liveness probe failed 3 times: exec test exited 1"]


def test_a_few_failures_short_of_the_threshold_are_forgiven_by_a_pass(tmp_path):
    flaky = tmp_path / "flip"
    script = f"if [ -f {flaky} ]; then rm {flaky}; exit 1; else touch {flaky}; fi"
    hung: list[str] = []
    runner = liveness(probe(exec={"command": ["sh", "-c", script]}, period_seconds=0.01, failure_threshold=2),
                      hung.append).start()
    time.sleep(0.3)
    runner.stop()
    assert hung == []

"""A hundred times the happy path's two hundred one-job workflows, through the scheduler's pass as it places now (the
allocation alone is written; a node's capacity is what the views show running on it): every core is used once and
none twice, and what does not fit waits."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from uuid import uuid4

from domain.allocation import QueueState
from tests.unit.app.builders import T0, user
from tests.unit.app.test_runner_sweep import GiB, control_plane

JOB = """version: v4
jobs:
  j:
    image: {uri: docker://alpine}
    command: ["true"]
    resource: {cpu: {cores: 1}, memory: {size: 16MiB}}
"""


def test_two_thousand_one_job_workflows_fill_every_core_of_four_nodes_once_and_the_rest_wait():
    roving, views, runner = control_plane()
    nodes = [roving.register_node(f"n{i}", 400, 400 * GiB, {}, {}, "pool", "127.0.0.1", 9100, T0)[0]
             for i in range(4)]
    owner = user()
    for _ in range(2000):
        roving.submit_workflow(uuid4(), "w", JOB, 0, None, owner, datetime.now(UTC))
    for _ in range(3):  # later passes must not place more on nodes whose cores the earlier ones filled
        runner.tick()
    states = Counter(roving.repository.get(a.id).state for a in views.queue.in_states(*QueueState))
    assert states == {QueueState.RUNNING: 1600, QueueState.READY: 400}
    assert [len(views.assignments(node).start) for node in nodes] == [400] * 4

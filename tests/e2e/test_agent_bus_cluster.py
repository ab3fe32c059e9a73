"""The agent bus on three nats-servers (ROVING_NATS_REPLICAS=3): agents hear their work pushed and report over NATS,
and kill -9 of any one server (each in turn, the event log's leader first) loses no job and no exit: while the bus is
broken the agents poll over HTTP, and once the servers are back their work travels over NATS again."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from adapters.nats_cluster import LocalCluster
from tests.e2e.stack import LocalStack
from tests.e2e.test_agent_bus import PLAIN, work_requests
from tests.e2e.test_lose_a_server import leader_of

ENDED = ("FINISHED", "FAILED", "CANCELED")


@pytest.fixture
def cluster(tmp_path: Path):
    running = LocalCluster(tmp_path / "cluster").start()
    yield running
    running.stop()


def pushed_jobs(stack: LocalStack, count: int, name: str) -> float:
    """HTTP requests for work and reports that `count` one-job workflows, run one after another, took."""
    time.sleep(0.5)
    before = work_requests(stack)
    for _ in range(count):
        assert stack.wait_status(stack.submit(PLAIN, name), ENDED, timeout=90)["status"] == "FINISHED"
    return work_requests(stack) - before


@pytest.mark.timeout(900)
def test_agents_hear_and_report_over_nats_on_three_servers_and_losing_any_one_loses_no_job_or_exit(
        cluster, tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    stack = LocalStack(tmp_path / "data", nodes=2, settings={"ROVING_NATS_URL": cluster.url,
                                                             "ROVING_NATS_REPLICAS": "3", "ROVING_CLUSTER": "bus"})
    stack.start()
    workflows: list[str] = []
    try:
        for _ in range(4):  # each agent hears its first push (until then its polls answer as before)
            stack.wait_status(stack.submit(PLAIN, "warm"), ENDED, timeout=90)
        assert pushed_jobs(stack, 6, "healthy") <= 3, "HTTP carried the work on a healthy cluster"
        first = int(leader_of(cluster.url, "ROVING_BUS").removeprefix("n"))
        for victim in (first, (first + 1) % 3, (first + 2) % 3):
            workflows += [stack.submit(PLAIN, f"before-{victim}") for _ in range(3)]
            cluster.kill(victim)
            for _ in range(6):
                workflows.append(stack.submit(PLAIN, f"during-{victim}"))
                time.sleep(0.5)
            cluster.restart(victim)
            time.sleep(3)
        ended = {w: stack.wait_status(w, ENDED, timeout=120) for w in workflows}
        assert {w: d["status"] for w, d in ended.items() if d["status"] != "FINISHED"} == {}
        exits = {w: [s["exit_code"] for s in d["stages"]] for w, d in ended.items()}
        assert {w: e for w, e in exits.items() if e != [0]} == {}, "an exit was not recorded"
        # back over the bus: an agent that fell back to HTTP for its reports tries the bus again after BUS_PAUSE
        time.sleep(62)
        for _ in range(4):
            stack.wait_status(stack.submit(PLAIN, "rewarm"), ENDED, timeout=90)
        assert pushed_jobs(stack, 6, "after") <= 3, "the agents did not come back to the bus"
    finally:
        stack.stop()

"""The contract of a three-server NATS cluster with ROVING_NATS_REPLICAS=3: kill -9 of any one server while jobs
run and more are submitted keeps /readyz at 200 (never non-200 for more than 2 s), no agent process exits, and every
workflow FINISHES. Each server is killed in turn (the leader of the event log first) and started again."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import httpx
import nats
import pytest

from adapters.nats_cluster import LocalCluster
from api.up.local_agents import agents_on
from tests.e2e.stack import LocalStack

CONTRACT = 2.0
JOB = """
version: v4
jobs:
  work:
    image: {uri: docker://alpine:3.20}
    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}
    script: sleep 1; echo ok
"""


class Readiness(threading.Thread):
    """/readyz every 0.1 s; the longest run of non-200 answers, in seconds."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url, self.stopping, self.longest, self.bad_since = url, threading.Event(), 0.0, None
        self.answers: list[str] = []

    def run(self) -> None:
        while not self.stopping.wait(0.1):
            try:
                answer = httpx.get(self.url + "/readyz", timeout=1.5)
                status, reason = answer.status_code, answer.text[:200]
            except httpx.HTTPError as error:
                status, reason = 0, repr(error)
            now = time.monotonic()
            if status == 200:
                self.bad_since = None
                continue
            self.bad_since = self.bad_since or now
            self.longest = max(self.longest, now - self.bad_since)
            self.answers.append(f"{status} {reason}")


def leader_of(url: str, stream: str) -> str:
    async def ask() -> str:
        nc = await nats.connect(url.split(","))
        try:
            return (await nc.jetstream().stream_info(stream)).cluster.leader
        finally:
            await nc.close()
    return asyncio.run(ask())


@pytest.fixture
def cluster(tmp_path: Path):
    running = LocalCluster(tmp_path / "cluster").start()
    yield running
    running.stop()


def test_killing_any_one_of_three_servers_keeps_readyz_agents_and_every_workflow(cluster, tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    stack = LocalStack(tmp_path / "data", nodes=2, settings={"ROVING_NATS_URL": cluster.url,
                                                             "ROVING_NATS_REPLICAS": "3", "ROVING_CLUSTER": "ha"})
    stack.start()
    readiness = Readiness(stack.url)
    workflows: list[str] = []
    names: list[str] = []
    try:
        agents = {node: agents_on(stack.work_dir / node) for node in ("local-1", "local-2")}
        readiness.start()
        first = int(leader_of(cluster.url, "ROVING_HA").removeprefix("n"))
        for victim in (first, (first + 1) % 3, (first + 2) % 3):
            for _ in range(4):
                workflows.append(stack.submit(JOB, f"before-{victim}"))
                names.append(f"before-{victim}")
            cluster.kill(victim)
            for _ in range(8):  # submitted while the server is down
                workflows.append(stack.submit(JOB, f"during-{victim}"))
                names.append(f"during-{victim}")
                time.sleep(0.5)
            cluster.restart(victim)
            time.sleep(3)  # it catches up before the next one goes
        ended = {w: stack.wait_status(w, ("FINISHED", "FAILED", "CANCELED"), timeout=120)["status"] for w in workflows}
        assert {w: s for w, s in ended.items() if s != "FINISHED"} == {}
        during = [w for w, name in zip(workflows, names, strict=True) if name.startswith("during")]
        lost = [w for w in during if "ok" not in stack.stage_log(w, "work", "ok", timeout=5)]
        assert lost == [], f"{len(lost)} of {len(during)} jobs run while a server was down lost their output"
        assert {node: agents_on(stack.work_dir / node) for node in agents} == agents, "an agent process exited"
    finally:
        readiness.stopping.set()
        stack.stop()
    print(f"longest /readyz outage {readiness.longest:.2f}s; {len(workflows)} workflows")
    assert readiness.longest <= CONTRACT, readiness.answers[-20:]

"""`roving up`'s agents hear of their work over NATS: a job starts without its agent asking over HTTP, and what is
pushed (run specs with their secrets resolved) is sealed per node: another node's agent, which shares the agent
NATS user and so receives every node's pushes, opens none of them."""

from __future__ import annotations

import asyncio
import re
import threading
import time

import nats
import pytest

from adapters.agent_bus import Unsealed, node_key, open_sealed
from adapters.auth.keyring import load_or_create_key
from adapters.nats_auth import read_credentials
from adapters.nats_tls import connect_options
from tests.e2e.stack import LocalStack
from tests.e2e.test_log_credentials import nats_address

VALUE = "bus-" + "sealed-value-7c1e"  # split so this file's own text is not what a grep of the wire finds
JOB = """
version: v4
jobs:
  j:
    image: {uri: docker://alpine}
    command: ["true"]
    env: [TOKEN=secret://user/bus]
    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}
"""
PLAIN = JOB.replace("    env: [TOKEN=secret://user/bus]\n", "")
ASSIGNMENTS = re.compile(r'^roving_http_requests_total\{[^}]*route="/v4/agent/assignments"[^}]*\} ([0-9.e+]+)$', re.M)


class Wiretap:
    """A client with the agent role's credentials (as any node's agent has them) on every node's subject."""

    def __init__(self, url: str, cluster: str) -> None:
        self.url, self.subject = url, f"roving_agents.{cluster}.node.*"
        self.heard: list[tuple[str, bytes]] = []
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def __enter__(self) -> Wiretap:
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self._subscribe(), self.loop).result(10)
        return self

    async def _subscribe(self) -> None:
        self.nc = await nats.connect(**connect_options(self.url), connect_timeout=2)

        async def heard(message) -> None:
            self.heard.append((message.subject, message.data))
        await self.nc.subscribe(self.subject, cb=heard)
        await self.nc.flush()

    def __exit__(self, *exc) -> None:
        asyncio.run_coroutine_threadsafe(self.nc.close(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


def assignments_answered(stack: LocalStack) -> float:
    return sum(float(v) for v in ASSIGNMENTS.findall(stack.client.get("/metrics").text))


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory):
    running = LocalStack(tmp_path_factory.mktemp("roving"), nodes=2).start()
    yield running
    running.stop()


def test_jobs_start_on_work_pushed_over_nats_without_their_agents_asking_over_http(stack):
    for _ in range(4):  # each agent hears its first push here (until then its polls answer as before)
        stack.wait_status(stack.submit(PLAIN, "warm"), ("FINISHED",))
    time.sleep(0.5)
    before = assignments_answered(stack)
    for _ in range(6):
        stack.wait_status(stack.submit(PLAIN, "pushed"), ("FINISHED",))
    answered = assignments_answered(stack) - before
    assert answered <= 3, f"{answered} assignments answers for 6 jobs: the polls still carried the work"


def test_another_nodes_agent_hears_node_as_run_spec_but_cannot_read_its_secret(stack):
    assert stack.client.post("/v4/secrets", json={"name": "bus", "value": VALUE, "scope": "user"}).status_code < 300
    agent = read_credentials(stack.data_dir / "nats" / "credentials" / "agent.creds")
    with Wiretap(agent.url(nats_address(stack.data_dir)), stack.cluster) as tap:
        workflow_id = stack.submit(JOB, "secret")
        done = stack.wait_status(workflow_id, ("FINISHED", "FAILED"))
        time.sleep(0.3)
    assert done["status"] == "FINISHED"
    assert tap.heard, "nothing was pushed"
    assert not [subject for subject, data in tap.heard if VALUE.encode() in data]  # never in clear on the wire
    key, nodes = load_or_create_key(stack.data_dir / "signing.key"), stack.ready_nodes()
    epochs = {str(n["id"]): n["epoch"] for n in nodes}
    carried = []
    for subject, data in tap.heard:
        own = subject.rsplit(".", 1)[1]
        plain = open_sealed(node_key(key, own, epochs[own]), subject, data)
        carried += [own] if VALUE.encode() in plain else []
        for other in set(epochs) - {own}:  # the other node's agent, with its own key
            with pytest.raises(Unsealed):
                open_sealed(node_key(key, other, epochs[other]), subject, data)
    assert carried, "no push carried the job's run spec"

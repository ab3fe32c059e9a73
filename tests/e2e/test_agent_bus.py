"""`roving up`'s agents speak to the control plane over NATS: a job starts and ends without its agent asking or
reporting over HTTP, and what travels (run specs with their secrets resolved, reports) is sealed per node: another
node's agent, which shares the agent NATS user and so receives every node's pushes, opens none of them, and cannot
report for that node."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from uuid import UUID, uuid4

import msgspec
import nats
import pytest

from adapters.agent_bus import Unsealed, node_key, open_sealed, reports_subject, seal
from adapters.auth.keyring import load_or_create_key
from adapters.jetstream.subjects import StreamNames
from adapters.nats_auth import read_credentials
from adapters.nats_tls import connect_options
from domain.agent_protocol import BatchResults, Report, Reports
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
WORK = re.compile(r'^roving_http_requests_total\{[^}]*route="/v4/agent/(?:assignments|reports|reports:batch)"[^}]*\}'
                  r' ([0-9.e+]+)$', re.M)


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


def work_requests(stack: LocalStack) -> float:
    """The agents' HTTP requests for work and with reports (not their heartbeats)."""
    return sum(float(v) for v in WORK.findall(stack.client.get("/metrics").text))


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory):
    running = LocalStack(tmp_path_factory.mktemp("roving"), nodes=2).start()
    yield running
    running.stop()


def test_jobs_start_and_end_over_nats_without_their_agents_asking_or_reporting_over_http(stack):
    for _ in range(4):  # each agent hears its first push here (until then its polls answer as before)
        stack.wait_status(stack.submit(PLAIN, "warm"), ("FINISHED",))
    time.sleep(0.5)
    before = work_requests(stack)
    for _ in range(6):
        stack.wait_status(stack.submit(PLAIN, "pushed"), ("FINISHED",))
    requests = work_requests(stack) - before
    assert requests <= 3, f"{requests} HTTP requests for 6 jobs' work and reports: HTTP still carried them"


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


def request(stack: LocalStack, subject: str, data: bytes) -> bytes:
    """A request as an agent makes it, with the agent role's credentials (any node's agent has them)."""
    agent = read_credentials(stack.data_dir / "nats" / "credentials" / "agent.creds")

    async def ask() -> bytes:
        nc = await nats.connect(**connect_options(agent.url(nats_address(stack.data_dir))), connect_timeout=2)
        try:
            return (await nc.request(subject, data, timeout=10)).data
        finally:
            await nc.close()
    return asyncio.run(ask())


def test_a_nodes_reports_over_nats_are_taken_only_sealed_with_its_own_key_at_its_epoch(stack):
    key = load_or_create_key(stack.data_dir / "signing.key")
    (a, a_epoch), (b, b_epoch) = [(str(n["id"]), n["epoch"]) for n in stack.ready_nodes()]
    subject = reports_subject(stack.cluster, a)

    def batch(node: str) -> bytes:
        one = Report(node_id=UUID(node), allocation_id=uuid4(), epoch=1, event="exited", exit_code=0)
        return msgspec.json.encode(Reports(node_id=UUID(node), reports=[one]))

    own = seal(node_key(key, a, a_epoch), a_epoch, subject, batch(a))
    answer = request(stack, subject, own)  # decided (an unknown allocation: 404), sealed back to node A
    results = msgspec.json.decode(open_sealed(node_key(key, a, a_epoch), subject + ".answer", answer), type=BatchResults)
    assert [r.status for r in results.results] == [404]
    refusals = {
        "node B's agent, with its own key": seal(node_key(key, b, b_epoch), b_epoch, subject, batch(a)),
        "node A's key at an earlier epoch": seal(node_key(key, a, a_epoch - 1), a_epoch - 1, subject, batch(a)),
        "node A's key, reports of node B": seal(node_key(key, a, a_epoch), a_epoch, subject, batch(b)),
        "tampered": own[:-1] + bytes([own[-1] ^ 1]),
        "sealed for node A's subject, sent on node B's": own,
    }
    for what, data in refusals.items():
        target = reports_subject(stack.cluster, b) if what.startswith("sealed for") else subject
        assert b"refused" in request(stack, target, data), what


def test_an_agent_cannot_aim_the_control_planes_answer_at_the_event_stream_or_the_jetstream_api(stack):
    """A request's reply subject is the requester's to choose and NATS checks no permission on it, while the control
    plane answering may publish anywhere: an answer sent where an agent named would put a message into the event
    stream (which only the control plane writes) or ask the JetStream API to delete it. Every agent holds these
    credentials; the control plane answers on an inbox only."""
    agent = read_credentials(stack.data_dir / "nats" / "credentials" / "agent.creds")
    control = read_credentials(stack.data_dir / "nats" / "credentials" / "control.creds")
    address, names = nats_address(stack.data_dir), StreamNames(stack.cluster)
    node = str(stack.ready_nodes()[0]["id"])
    forged = f"roving.{stack.cluster}.workflow.{uuid4()}"

    async def attempt() -> tuple[int, int]:
        admin = await nats.connect(**connect_options(control.url(address)), connect_timeout=2)
        nc = await nats.connect(**connect_options(agent.url(address)), connect_timeout=2)
        try:
            js = admin.jetstream()
            before = (await js.stream_info(names.events)).state.messages
            for reply in (forged, f"$JS.API.STREAM.PURGE.{names.events}", f"$JS.API.STREAM.DELETE.{names.events}"):
                await nc.publish(reports_subject(stack.cluster, node), b"not an envelope", reply=reply)
            await nc.flush()
            await asyncio.sleep(2.0)  # the responder answers at once: time enough for an answer to land
            try:
                await js.get_last_msg(names.events, forged)
            except nats.js.errors.NotFoundError:
                return before, 0
            return before, 1
        finally:
            await nc.close()
            await admin.close()

    before, landed = asyncio.run(attempt())
    assert landed == 0, "an agent put a message on an event subject through the control plane's answer"
    after = asyncio.run(stream_messages(control.url(address), names.events))
    assert after >= before > 0, f"the event stream went from {before} messages to {after}"


async def stream_messages(url: str, stream: str) -> int:
    nc = await nats.connect(**connect_options(url), connect_timeout=2)
    try:
        return (await nc.jetstream().stream_info(stream)).state.messages
    finally:
        await nc.close()

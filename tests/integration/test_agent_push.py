"""Work pushed to agents on a real log and a real nats-server: a placement reaches its node's subject sealed with that
node's key, and a poll held for an agent that hears the bus is not answered with what was pushed to it (an agent
that does not say so is answered as before)."""

from __future__ import annotations

import asyncio
import time
from uuid import UUID, uuid4

import msgspec
import nats
import pytest

from adapters.agent_bus import key_text, node_key, open_sealed, starts_subject
from adapters.jetstream.connection import Connection
from adapters.tailer import Tailer
from api.agent.bus import REPORT_TIMEOUT, AgentBus
from api.composition.agent_push import StartsPublisher
from api.composition.services import Services
from api.composition.settings import load_settings
from api.composition.wakeups import AssignmentWaiters, LogSignals
from api.http.app import create_app
from domain.agent_protocol import Assignments, Config, Pushed, Report, Reports, Start
from domain.app import Roving
from domain.app.ids import allocation_id
from domain.tenancy.permissions import Principal, Role
from projections.views import Views
from tests.integration.test_long_poll import HELD, client, now, on_node, place, poll, run, submitted
from tests.unit.api.harness import KEY, FakeLeases, FakeLogs, PlainHasher
from tests.unit.app.builders import ADMIN


@pytest.fixture
def plane(nats_url: str, request: pytest.FixtureRequest):
    leading = getattr(request, "param", True)  # False: another API worker than the scheduler leader's
    cluster = f"push-{uuid4().hex[:6]}"
    roving = Roving(env={"PERSISTENCE_MODULE": "adapters.jetstream", "ROVING_NATS_URL": nats_url,
                         "ROVING_CLUSTER": cluster}, passwords=PlainHasher())
    views = Views()
    tailer = Tailer(roving, views)
    waiters = AssignmentWaiters(views)
    signals = LogSignals.attach(tailer)
    signals.listen(waiters.observe)
    connection = Connection(nats_url, cluster)
    push = StartsPublisher(views, KEY, connection, cluster, waiters, lambda: leading).start()
    signals.listeners.insert(0, push.observe)  # as api/composition/stack.py wires it
    tailer.start()
    services = Services(roving=roving, views=views, tailer=tailer, key=KEY, logs=FakeLogs(),
                        leases=FakeLeases(), waiters=waiters, nats_url=nats_url, cluster=cluster)
    yield services, create_app(load_settings({}), services), cluster, nats_url
    push.stop()
    tailer.stop()
    connection.close()
    roving.close()


def test_a_placement_is_pushed_sealed_for_its_node_and_a_poll_of_an_agent_hearing_the_bus_does_not_repeat_it(plane):
    svc, app, cluster, url = plane

    async def scenario():
        node, allocation = await on_node(svc, "n1"), await submitted(svc)
        heard: list = []
        nc = await nats.connect(url)

        async def hear(message) -> None:
            heard.append(message)
        await nc.subscribe(starts_subject(cluster, node), cb=hear)
        await nc.flush()
        async with client(app) as http:
            hearing = asyncio.ensure_future(http.get("/v4/agent/assignments", params={
                "node_id": str(node), "wait": 20, "bus": "1"}))
            deaf = poll(http, node, wait=20)
            await asyncio.sleep(HELD)
            await place(svc, allocation, node)
            answer = await asyncio.wait_for(deaf, 10)  # an agent that does not hear the bus: answered as before
            deadline = time.monotonic() + 10
            while not heard and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            await asyncio.sleep(HELD)
            assert not hearing.done(), "the poll of an agent hearing the bus answered what was pushed to it"
            hearing.cancel()
        await nc.close()
        assert [s["allocation_id"] for s in answer.json()["start"]] == [str(allocation)]
        epoch = svc.views.nodes.node(node).epoch
        pushed = msgspec.json.decode(open_sealed(node_key(KEY, node, epoch), heard[0].subject, heard[0].data),
                                     type=Pushed)
        pushed_answer = msgspec.json.decode(pushed.assignments, type=Assignments[Start])
        assert (pushed.node_id, [s.allocation_id for s in pushed_answer.start]) == (node, [str(allocation)])
        # built at the placement's log position, as the poll's answer was: the agent compares the two by it
        assert pushed_answer.position == answer.json()["position"] > 0

    run(scenario())


def test_an_agent_whose_control_plane_answers_nothing_on_the_bus_sends_its_reports_over_http_at_once(nats_url):
    node = "00000000-0000-4000-8000-00000000000a"

    async def scenario():
        bus = AgentBus(lambda: node, asyncio.Event())
        bus.keyed(1, key_text(node_key(KEY, node, 1)))
        await bus.connect(Config(nats_url=nats_url, cluster=f"old-{uuid4().hex[:6]}"))  # no responder: older
        bus.live = True  # as if it had heard a push (from another control plane: it does not answer reports)
        report = Report(node_id=UUID(node), allocation_id=uuid4(), epoch=1, event="exited", exit_code=0)
        began = time.monotonic()
        assert await bus.report(Reports(node_id=UUID(node), reports=[report])) is None
        assert time.monotonic() - began < REPORT_TIMEOUT  # told there is no responder, not timed out
        assert bus.nc is not None and bus.nc.is_connected
        began = time.monotonic()
        assert await bus.report(Reports(node_id=UUID(node), reports=[report])) is None  # not asked again for a while
        assert time.monotonic() - began < 0.05
        await bus.close()

    run(scenario())


BIG = ("version: v4\njobs:\n  j:\n    image: {{uri: docker://alpine}}\n    script: |\n      echo {pad}\n"
       "    resource: {{cpu: {{cores: 1}}}}\n")
SMALL = "version: v4\njobs:\n  j:\n    image: {uri: docker://alpine}\n    command: ['true']\n"


def owned_by_a_user(svc) -> Principal:
    """An owner the views know, so each start carries its workflow's token (~540 bytes), as in production."""
    org = svc.roving.create_organization("big", ADMIN, now())
    user = svc.roving.create_user(org, "big-user", "big@example.test", "Blue-Kettle-42-Moon", "user", ADMIN, now())
    return Principal(user_id=user, username="big-user", role=Role.USER, organization_id=org)


# long scripts: 60 starts of some 24 KB; many starts: 1,020 of ~540 bytes, each given its workflow token (~520 bytes)
# when sent, some 1.08 MB (on another worker only: the leader's process learns of its failed publish either way)
@pytest.mark.parametrize("plane, count, pad", [(True, 60, 24_000), (False, 60, 24_000), (False, 1_020, None)],
                         ids=["leaders-worker-long-scripts", "another-worker-long-scripts", "another-worker-many-starts"],
                         indirect=["plane"])
def test_a_nodes_starts_too_large_for_one_nats_message_reach_its_agent_through_the_poll_at_once(
        plane, count: int, pad: int | None):
    """Hundreds of starts on one node (2,000 jobs on large nodes) make an answer over NATS's max payload (1 MiB by
    default): with long scripts, or many starts each with its workflow token. No push carries it, so the poll of the
    agent that hears the bus must, at once, whichever API worker holds it (another than the leader's never learns
    that the leader's publish failed)."""
    svc, app, cluster, url = plane

    async def scenario():
        node, owner = await on_node(svc, "big"), await asyncio.to_thread(owned_by_a_user, svc)
        allocations, definition = [], SMALL if pad is None else BIG.format(pad="x" * pad)
        for _ in range(count):
            workflow_id = uuid4()
            await asyncio.to_thread(svc.roving.submit_workflow, workflow_id, "w", definition, 0, None,
                                    owner, now())
            allocations.append(allocation_id(workflow_id, "j", 1))
        async with client(app) as http:
            for allocation in allocations:
                await place(svc, allocation, node)
            deadline = time.monotonic() + 20
            while len(svc.views.assignments(node).start) < count and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            began = time.monotonic()
            answer = await http.get("/v4/agent/assignments", params={"node_id": str(node), "wait": 20, "bus": "1"})
            waited = time.monotonic() - began
        assert sorted(s["allocation_id"] for s in answer.json()["start"]) == sorted(map(str, allocations))
        assert len(answer.content) > 1 << 20  # the case at hand: no NATS message (1 MiB by default) could carry it
        assert waited < 5, f"the poll held {waited:.1f}s an answer the push could not carry"

    asyncio.run(asyncio.wait_for(scenario(), 120))

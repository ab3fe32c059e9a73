"""Agents' long polls on a real log: a held `GET /v4/agent/assignments?wait=S` answers as soon as its node has news."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from uuid import UUID, uuid4

import httpx
import pytest

from adapters.tailer import Tailer
from api.composition.services import Services
from api.composition.settings import load_settings
from api.composition.wakeups import AssignmentWaiters, LogSignals
from api.http.app import create_app
from domain.app import Roving
from domain.app.ids import allocation_id
from domain.tenancy import Role, Source
from domain.tenancy.permissions import Principal
from projections.views import Views
from tests.unit.api.harness import KEY, FakeLeases, FakeLogs, token
from tests.unit.app.builders import PlainHasher

OWNER = Principal(user_id=uuid4(), username="alice", role=Role.USER, organization_id=uuid4())
AGENT = {"Authorization": f"Bearer {token('agent', Role.USER, source=Source.AGENT)}"}
JOB = ("version: v4\njobs:\n  j:\n    image: {uri: docker://alpine}\n    command: [sleep, '60']\n"
       "    resource: {cpu: {cores: 1}}\n")
HELD = 0.3  # long enough for a poll that should be held to have been answered if it were not


def now() -> datetime:
    return datetime.now(UTC)


@pytest.fixture
def plane(nats_url: str):
    roving = Roving(env={"PERSISTENCE_MODULE": "adapters.jetstream", "ROVING_NATS_URL": nats_url,
                         "ROVING_CLUSTER": f"poll-{uuid4().hex[:6]}"}, passwords=PlainHasher())
    views = Views()
    tailer = Tailer(roving, views)
    waiters = AssignmentWaiters(views)
    LogSignals.attach(tailer).listen(waiters.observe)
    tailer.start()
    services = Services(roving=roving, views=views, tailer=tailer, key=KEY, logs=FakeLogs(),
                        leases=FakeLeases(), waiters=waiters, nats_url=nats_url, cluster="test")
    yield services, create_app(load_settings({}), services)
    tailer.stop()
    roving.close()


def run(scenario) -> None:
    asyncio.run(asyncio.wait_for(scenario, 30))


def client(app) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://roving.test", headers=AGENT)


async def on_node(svc, name: str) -> UUID:
    node, _ = await asyncio.to_thread(svc.roving.register_node, name, 4, 8 << 30, {}, {}, "pool", "", None, now())
    return node


async def submitted(svc) -> UUID:
    workflow_id = uuid4()
    await asyncio.to_thread(svc.roving.submit_workflow, workflow_id, "w", JOB, 0, None, OWNER, now())
    return allocation_id(workflow_id, "j", 1)


async def place(svc, allocation: UUID, node: UUID) -> None:
    await asyncio.to_thread(svc.roving.place, allocation, [node], "scheduler", now())


def poll(http: httpx.AsyncClient, node: UUID, wait: float, etag: str | None = None) -> asyncio.Task:
    headers = {"If-None-Match": etag} if etag else {}
    return asyncio.ensure_future(http.get("/v4/agent/assignments", params={"node_id": str(node), "wait": wait},
                                          headers=headers))


def test_a_held_poll_answers_when_work_is_placed_on_its_node_and_not_before(plane):
    svc, app = plane

    async def scenario():
        mine, other = await on_node(svc, "n1"), await on_node(svc, "n2")
        first, second = await submitted(svc), await submitted(svc)
        async with client(app) as http:
            held = poll(http, mine, wait=20)
            await asyncio.sleep(HELD)
            await place(svc, first, other)
            await asyncio.sleep(HELD)
            assert not held.done(), "the poll answered before its node had anything to run"
            await place(svc, second, mine)
            answer = await asyncio.wait_for(held, 10)
        assert [s["allocation_id"] for s in answer.json()["start"]] == [str(second)]

    run(scenario())


def test_a_poll_held_with_its_etag_answers_when_its_running_work_is_to_stop(plane):
    svc, app = plane

    async def scenario():
        node, allocation = await on_node(svc, "n1"), await submitted(svc)
        await place(svc, allocation, node)
        async with client(app) as http:
            await asyncio.to_thread(svc.tailer.wait_for, svc.roving.last_position, 5)
            running = await http.get("/v4/agent/assignments", params={"node_id": str(node)})
            assert len(running.json()["start"]) == 1
            held = poll(http, node, wait=20, etag=running.headers["etag"])
            await asyncio.sleep(HELD)
            assert not held.done(), "an unchanged answer was sent again"
            workflow = svc.views.queue.allocation(allocation).workflow_id
            await asyncio.to_thread(svc.roving.stop_workflow, workflow, OWNER, now())
            answer = await asyncio.wait_for(held, 10)
        assert [s["allocation_id"] for s in answer.json()["stop"]] == [str(allocation)]
        assert answer.headers["etag"] != running.headers["etag"]

    run(scenario())


def test_a_held_poll_with_no_news_answers_the_empty_body_when_its_wait_passes(plane):
    svc, app = plane

    async def scenario():
        node = await on_node(svc, "n1")
        async with client(app) as http:
            answer = await poll(http, node, wait=0.5)
        assert (answer.status_code, answer.json()) == (200, {"start": [], "stop": [], "volumes": [],
                                                             "position": svc.views.position})

    run(scenario())


def test_an_answer_names_the_log_position_it_was_built_at_and_its_etag_does_not_depend_on_it(plane):
    svc, app = plane

    async def scenario():
        node = await on_node(svc, "n1")
        async with client(app) as http:
            first = await poll(http, node, wait=0)
            await on_node(svc, "n2")  # a write that changes nothing of n1's
            await asyncio.to_thread(svc.views.wait_for, svc.roving.last_position, 10)
            second = await poll(http, node, wait=0)
        assert 0 < first.json()["position"] < second.json()["position"] == svc.views.position
        assert first.headers["etag"] == second.headers["etag"], "equal answers of workers at other positions differ"

    run(scenario())


def test_a_poll_held_after_an_answer_is_not_woken_by_its_work_ending_but_by_new_work(plane):
    svc, app = plane

    async def scenario():
        node, first, second = await on_node(svc, "n1"), await submitted(svc), await submitted(svc)
        epoch = await asyncio.to_thread(svc.roving.place, first, [node], "scheduler", now())
        async with client(app) as http:
            await asyncio.to_thread(svc.tailer.wait_for, svc.roving.last_position, 5)
            running = await http.get("/v4/agent/assignments", params={"node_id": str(node)})
            held = poll(http, node, wait=20, etag=running.headers["etag"])
            await asyncio.sleep(HELD)
            await asyncio.to_thread(svc.roving.report, node, first, epoch, "exited", 0, "", now())
            await asyncio.sleep(HELD)
            assert not held.done(), "the end of work the agent itself reported woke its poll"
            await place(svc, second, node)
            answer = await asyncio.wait_for(held, 10)
        assert [s["allocation_id"] for s in answer.json()["start"]] == [str(second)]

    run(scenario())

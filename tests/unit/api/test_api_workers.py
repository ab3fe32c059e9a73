"""Several API workers: the setting, the shared port, read-your-writes by log position, the audit by lease."""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import threading
import time
from types import SimpleNamespace

import httpx
import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import JSONResponse
from starlette.routing import Route

from api.composition.audit_lease import AuditByLease
from api.composition.settings import SettingsError, load_settings
from api.http.positions import LogEnd, PositionMiddleware, PositionWaiters
from api.http.routes import common
from api.up.main import _workers_option
from api.up.workers import listening_socket


def test_workers_default_to_one_auto_is_the_core_count_up_to_eight_and_fewer_than_one_is_refused():
    assert load_settings({}).api_workers == 1
    assert load_settings({"ROVING_API_WORKERS": "auto"}).api_workers == max(1, min(os.cpu_count() or 1, 8))
    assert load_settings({"ROVING_API_WORKERS": "3"}).api_workers == 3
    with pytest.raises(SettingsError, match="ROVING_API_WORKERS"):
        load_settings({"ROVING_API_WORKERS": "0"})


def test_the_workers_flag_refuses_a_count_below_one():
    parser = argparse.ArgumentParser(exit_on_error=False)
    _workers_option(parser)
    assert parser.parse_args(["--workers", "4"]).workers == 4
    assert parser.parse_args(["--workers", "auto"]).workers == max(1, min(os.cpu_count() or 1, 8))
    with pytest.raises(argparse.ArgumentError, match="at least 1"):
        parser.parse_args(["--workers", "0"])


def test_workers_share_one_port_that_no_other_program_can_take():
    first = listening_socket("127.0.0.1", 0)
    port = first.getsockname()[1]
    second = listening_socket("127.0.0.1", port)
    first.listen()
    second.listen()
    stranger = socket.socket()
    with pytest.raises(OSError):
        stranger.bind(("127.0.0.1", port))
    for sock in (first, second, stranger):
        sock.close()


class Views:
    def __init__(self, position: int) -> None:
        self.position = position


def app_over(views: Views, log_end: int, workers: int) -> Starlette:
    """A route answering what its views hold, behind the position middleware, over a log ending at `log_end`."""
    async def read(request):
        return JSONResponse({"position": views.position})

    services = SimpleNamespace(views=views, tailer=None, positions=PositionWaiters(views),
                               roving=SimpleNamespace(last_position=0,
                                                      recorder=SimpleNamespace(max_notification_id=lambda: log_end)))
    app = Starlette(routes=[Route("/v4/things", read), Route("/v4/agent/assignments", read)],
                    middleware=[Middleware(PositionMiddleware, workers=workers)])
    app.state.services = services
    return app


def applied_later(app: Starlette, views: Views, position: int, after: float = 0.2) -> None:
    """The tailer applies `position` a moment from now, on its own thread, as the real one does."""
    def apply() -> None:
        views.position = position
        app.state.services.positions.observe([(position, None)])
    threading.Timer(after, apply).start()


async def get(app: Starlette, path: str = "/v4/things", **headers: str) -> httpx.Response:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        return await client.get(path, headers=headers)


def test_with_several_workers_a_read_waits_for_the_log_end_it_arrived_at():
    views = Views(5)
    app = app_over(views, log_end=7, workers=2)
    applied_later(app, views, 7)
    answer = asyncio.run(get(app))
    assert answer.json() == {"position": 7}
    assert answer.headers["Roving-Position"] == "7"


def test_an_agents_poll_and_a_single_worker_answer_from_the_views_at_once():
    views = Views(5)
    assert asyncio.run(get(app_over(views, log_end=7, workers=2), "/v4/agent/assignments")).json() == {"position": 5}
    assert asyncio.run(get(app_over(views, log_end=7, workers=1))).json() == {"position": 5}


def test_a_request_naming_a_position_waits_for_it_even_with_one_worker():
    views = Views(5)
    app = app_over(views, log_end=5, workers=1)
    applied_later(app, views, 9)
    assert asyncio.run(get(app, **{"Roving-Position": "9"})).json() == {"position": 9}


def test_a_position_that_is_not_a_number_is_refused_naming_the_header():
    answer = asyncio.run(get(app_over(Views(5), log_end=5, workers=2), **{"Roving-Position": "latest"}))
    assert answer.status_code == 400
    assert answer.json()["errors"][0]["path"] == "Roving-Position"


class Part:
    def __init__(self) -> None:
        self.stopped = self.closed = self.alive = False

    def stop(self, timeout: float = 5.0) -> None:
        self.stopped = True

    def close(self) -> None:
        self.closed = True


def test_the_audit_runs_while_this_worker_leads_and_is_handed_over_when_it_stops_leading():
    runner, published, opened = SimpleNamespace(leading=False), [], []

    def open_audit():
        if len(opened) == 0 and runner.leading and not getattr(runner, "free", False):
            opened.append("refused")
            raise OSError("Could not set lock on file audit.duckdb")  # the previous holder still has it
        opened.append((Part(), "audit", Part()))
        return opened[-1]

    lease = AuditByLease(runner, open_audit, published.append)
    lease.check()
    assert not lease.running and published == []
    runner.leading = True
    lease.check()
    assert not lease.running  # the file was still locked: tried again at the next check
    lease.check()
    assert lease.running and published == ["audit"]
    lease.check()
    assert published == ["audit", "audit"]  # announced again while it leads
    runner.leading = False
    lease.check()
    store, _, feed = opened[-1]
    assert not lease.running and published[-1] is None and store.closed and feed.stopped


def test_the_cli_sends_the_furthest_position_it_was_answered_with():
    seen: list[str | None] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("Roving-Position"))
        position = {"/v4/workflows": "42", "/v4/nodes": "40"}.get(request.url.path, "41")
        return httpx.Response(200, json={}, headers={"Roving-Position": position})

    from api.cli.client import Client

    client = Client("http://roving.test", "token", transport=httpx.MockTransport(answer))
    client.post("/v4/workflows", {})
    client.get("/v4/nodes")
    client.get("/v4/queue")
    assert seen == [None, "42", "42"]


def test_requests_waiting_together_share_one_question_to_the_log_and_none_joins_an_earlier_one():
    asked: list[int] = []

    def max_notification_id() -> int:
        asked.append(len(asked) + 1)
        time.sleep(0.05)  # a round trip; requests arriving meanwhile wait for the next question
        return 10 * len(asked)

    services = SimpleNamespace(roving=SimpleNamespace(recorder=SimpleNamespace(max_notification_id=max_notification_id)))
    end = LogEnd()

    async def burst() -> list[int | None]:
        first = asyncio.ensure_future(end.now(services))
        await asyncio.sleep(0.01)  # the first question is on its way: these join the next one
        rest = await asyncio.gather(*(end.now(services) for _ in range(20)))
        return [await first, *rest]

    answers = asyncio.run(burst())
    assert answers == [10] + [20] * 20 and len(asked) == 2


def test_a_standby_scheduler_asks_for_the_lease_on_its_own_pace_not_on_every_wake():
    from api.scheduler.runner import SchedulerRunner

    class Held:
        ttl, asked, free = 10.0, 0, False

        def hold_leadership(self, holder: str) -> bool:
            self.asked += 1
            return self.free

    leases = Held()
    runner = SchedulerRunner(None, None, None, leases)
    assert [runner.lead() for _ in range(50)] == [False] * 50
    assert leases.asked == 1  # another worker leads: one question, then quiet for a quarter of the TTL
    runner._standby_until = 0.0  # that quarter passed, and the leader is gone
    leases.free = True
    assert runner.lead() and leases.asked == 2


def test_writes_answered_together_all_see_what_they_saved_once_the_views_applied_it():
    views = Views(5)

    async def write(request):
        await common.settle(request)  # what the application saved last: position 9
        return JSONResponse({"position": views.position})

    app = Starlette(routes=[Route("/v4/things", write, methods=["POST"])])
    app.state.services = SimpleNamespace(views=views, tailer=None, positions=PositionWaiters(views),
                                         roving=SimpleNamespace(last_position=9))
    applied_later(app, views, 9)

    async def both() -> list[httpx.Response]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
            return await asyncio.gather(client.post("/v4/things"), client.post("/v4/things"))
    assert [answer.json() for answer in asyncio.run(both())] == [{"position": 9}, {"position": 9}]

"""A request to an endpoint whose pool scaled to zero: it wakes a replica and waits for one to be ready, at most
`ROVING_WAKE_TIMEOUT` (then 503 with Retry-After, as for any endpoint with no ready replica).

The callers of a public endpoint are anonymous, so what they can make the control plane do is bounded: the requests
waiting on one endpoint share one waiter (one view read a poll, however many wait), at most `ROVING_WAKE_WAITERS`
of them wait (the next is answered 503 with Retry-After at once), the pool is asked to scale at most once every
WAKE_EVERY seconds an endpoint, and a scale the pool refuses is answered 503 with its reason at once rather than
after the whole wait."""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import structlog
from starlette.requests import HTTPConnection
from starlette.responses import Response

from api.http.errors import problem
from api.http.routes import common as c
from domain.app import Conflict, NotFound
from domain.endpoint import Endpoint

log = structlog.get_logger("roving.autoscaler")

POLL_SECONDS = 0.1  # how often an endpoint's waiter looks at the endpoints view again
RETRY_AFTER = "5"  # seconds a refused caller is asked to wait: a woken replica may be just about ready
WAKE_EVERY = 5.0  # seconds between two wakes of one endpoint's pool (each loads its workflow off the loop)


@dataclass(frozen=True)
class Wake:
    """What a wake did: `waits` when a replica is (being) woken, so a request may wait for it; else `refused` says
    why the pool would not scale ("" when it cannot scale to zero at all: nothing to wait for)."""

    waits: bool
    refused: str = ""


@dataclass
class Waking:
    """One API process's waits for pools to wake: the shared waiter of each endpoint (its outcome: "ready", "" when
    there is nothing to wait for or no replica got ready in time, else the reason the scale was refused), how many
    requests wait on each, and when each endpoint last woke its pool (loop time)."""

    waiters: dict[str, asyncio.Task[str]] = field(default_factory=dict)
    waiting: dict[str, int] = field(default_factory=dict)
    woke_at: dict[str, float] = field(default_factory=dict)


def pool_of(views: Any, workflow_id: Any, service: str) -> Any:
    """The autoscaled pool of `service` as the views have it now, or None."""
    view = views.workflows
    with view.lock:  # the tailer applies events to the mirrored workflow on its own thread
        workflow = view.workflow(workflow_id)
        return next((p for p in workflow.pools() if p.service == service), None) if workflow else None


def wake(roving: Any, views: Any, workflow_id: Any, service: str, endpoint: str, now: datetime,
         scale: bool = True) -> Wake:
    """For a request through `endpoint`: whether its pool may scale to zero (then the request may wait for it), and,
    when it is at zero now and `scale`, one replica asked for. Another request waking it first is no failure; a
    refusal (the workflow ended or is gone) is: there is nothing coming to wait for."""
    pool = pool_of(views, workflow_id, service)
    if pool is None or pool.rule.low != 0:
        return Wake(False)
    if pool.size == 0 and scale:
        try:
            if roving.scale_service(workflow_id, service, 0, 1, f"woken by a request through endpoint {endpoint}",
                                    now, by="proxy"):
                log.info("autoscaler.woken", workflow=str(workflow_id), service=service, endpoint=endpoint)
        except (Conflict, NotFound) as error:
            log.info("autoscaler.wake_refused", workflow=str(workflow_id), service=service, reason=str(error))
            return Wake(False, str(error) or type(error).__name__)
    return Wake(True)


def not_serving(endpoint: Endpoint, reason: str = "") -> Response:
    answer = problem(503, reason or endpoint.not_serving_reason())
    answer.headers["Retry-After"] = RETRY_AFTER
    return answer


async def woken(request: HTTPConnection, endpoint: Endpoint, find: Any) -> Endpoint | Response | None:
    """The endpoint once a replica of its pool is ready; a 503 to answer at once (too many waiting, or the pool
    refused to wake); or None: its pool cannot scale to zero (nothing to wait for), or none got ready within the
    bound. `find` reads the endpoint again from the views."""
    if endpoint.binding is None:
        return None
    state, name = waking(request), endpoint.name
    if state.waiting.get(name, 0) >= request.app.state.settings.wake_waiters:
        return not_serving(endpoint, f"endpoint {name}: too many requests are waiting for its pool to wake; "
                                     f"try again")
    waiter = state.waiters.get(name)
    if waiter is None:
        waiter = state.waiters[name] = asyncio.create_task(_wait(request, endpoint, find, state))
        waiter.add_done_callback(lambda done: state.waiters.pop(name) if state.waiters.get(name) is done else None)
    state.waiting[name] = state.waiting.get(name, 0) + 1
    try:
        outcome = await asyncio.shield(waiter)  # a caller gone does not end the others' wait
    finally:
        state.waiting[name] -= 1
        if not state.waiting[name]:
            del state.waiting[name]
    if outcome == "ready":
        return await find(request)
    return not_serving(endpoint, f"endpoint {name}: its pool did not wake: {outcome}") if outcome else None


def waking(request: HTTPConnection) -> Waking:
    state = request.app.state
    if getattr(state, "waking", None) is None:
        state.waking = Waking()
    found: Waking = state.waking
    return found


async def _wait(request: HTTPConnection, endpoint: Endpoint, find: Any, state: Waking) -> str:
    """The shared waiter of `endpoint`: wakes its pool (unless it did so less than WAKE_EVERY ago) and polls the
    views until a replica is ready or the bound passes."""
    binding, svc, loop = endpoint.binding, c.services(request), asyncio.get_running_loop()
    assert binding is not None
    scale = loop.time() - state.woke_at.get(endpoint.name, -math.inf) >= WAKE_EVERY
    if scale:
        state.woke_at[endpoint.name] = loop.time()
    verdict = await c.call(wake, svc.roving, svc.views, binding.workflow_id, binding.service, endpoint.name, c.now(),
                           scale)
    if not verdict.waits:
        return verdict.refused
    deadline = loop.time() + request.app.state.settings.wake_seconds
    while loop.time() < deadline:
        await asyncio.sleep(POLL_SECONDS)
        found = await find(request)
        if found is not None and found.serving_target() is not None:
            return "ready"
    return ""

"""The node agent protocol: register, heartbeat (lease), assignments, reports and where logs go."""

from __future__ import annotations

import hashlib
import secrets as secrets_module
from datetime import timedelta
from uuid import UUID

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from adapters.agent_bus import key_text, node_key
from adapters.auth.tokens import Identity, issue
from api.http.answers import Ok, answers
from api.http.errors import BadRequest
from api.http.routes import common as c
from api.http.routes import secrets
from api.http.workflow_tokens import with_workflow_tokens
from domain.agent_address import address_problem
from domain.agent_protocol import (
    Assignments,
    BatchResult,
    BatchResults,
    Beat,
    Config,
    Heartbeat,
    Register,
    Registered,
    Report,
    Reports,
    Start,
    bounded_reason,
)
from domain.app import access
from domain.app.errors import Conflict, NotFound, StaleEpoch
from domain.app.ids import node_id
from domain.tenancy import Role, Source

MAX_WAIT_SECONDS = 30
NODE_TOKEN_TTL = timedelta(days=30)  # as the shared agent token `roving up` writes
ADVISORY = frozenset({"started"})  # reports the application records no event for


def recorded_as(b: Report) -> Report:
    """A node that could not use the stage's image ran it on the host: the workflow's events say so, in the
    agent's words ("image X was not used: this node's runtime is host"), as the image's other news."""
    b = bounded_reason(b)  # stored in the stage's events: an event is one JetStream message
    return msgspec.structs.replace(b, event="image") if b.event == "ran_on_host" else b


def agent_only(request: Request, node: UUID | None = None) -> None:
    """Only agents (and cluster admins, for repair) speak this protocol; a node's own token only for its node."""
    principal = c.principal(request)
    access.agent(principal)
    if node is not None:
        access.own_node(principal, node)


@answers(Registered)
async def register(request: Request) -> Response:
    """Registration answers the node's own token: its agent uses it from then on, and admins can list and revoke it
    (`/v4/nodes/{id}/credentials`). The shared agent token is for bootstrap: it registers any node not fenced."""
    agent_only(request)
    b, svc, now = await c.body(request, Register), c.services(request), c.now()
    agent_only(request, node_id(b.name))
    if (wrong := address_problem(b.address)) is not None:  # the control plane builds URLs from it (node metrics)
        raise BadRequest("address", wrong)
    # hex, never a leading '-': `roving node credential revoke NODE ID` took one such id for an option (1 run in 64)
    credential_id, ttl = secrets_module.token_hex(9), NODE_TOKEN_TTL
    node, epoch = await c.call(svc.roving.register_node, b.name, b.cpu, b.memory, b.devices, b.annotations,
                               b.definition, b.address, b.metrics_port, now, (credential_id, now + ttl),
                               c.principal(request), segment=b.segment)
    identity = Identity(user_id=None, username=access.NODE_PREFIX + b.name, role=Role.USER, organization_id=None,
                        source=Source.AGENT)
    token = issue(identity, svc.key, ttl, now, token_id=credential_id)
    await touch_lease(svc, node)  # alive from its first moment, not from its first heartbeat
    await c.settle(request)
    return c.json(Registered(node_id=node, epoch=epoch, token=token, credential_id=credential_id,
                             bus_key=bus_key(svc, node, epoch)))


def bus_key(svc, node: UUID, epoch: int) -> str:
    """The node's agent bus key at this epoch (adapters/agent_bus.py), for its agent alone: answered only to a
    caller that speaks for that node."""
    return key_text(node_key(svc.key, node, epoch))


@answers(Beat)
async def heartbeat(request: Request) -> Response:
    """A stale epoch answers 409 (the agent re-registers); a current one refreshes the node's lease."""
    b, svc = await c.body(request, Heartbeat), c.services(request)
    agent_only(request, b.node_id)
    await c.call(svc.roving.check_agent, b.node_id, b.epoch)
    await touch_lease(svc, b.node_id)
    return c.json(Beat(bus_key=bus_key(svc, b.node_id, b.epoch)))


async def touch_lease(svc, node) -> None:
    if svc.leases is not None:
        await c.call(svc.leases.touch, str(node))


@answers(Assignments[Start])
async def assignments(request: Request) -> Response:
    """With `wait=S`, a node with nothing to start or stop is answered when it has (or after S seconds).

    Every answer carries an `ETag`; a poll that sends it back as `If-None-Match` is held instead until the
    answer differs from it, so an agent with running work (always listed) can wait for news too."""
    node, seconds, svc = node_param(request), wait_param(request), c.services(request)
    agent_only(request, node)
    known = request.headers.get("if-none-match")

    waiters = svc.waiters

    async def read() -> Assignments[Start]:
        ready = waiters.current(node, svc.views.position) if waiters is not None else None
        return ready if ready is not None else await c.call(svc.views.answer, node)

    if seconds and waiters is not None:
        news = news_since(waiters, node, known)
        if request.query_params.get("bus") == "1":  # the agent hears pushes: what was pushed to it is no news
            news = not_pushed(waiters, node, news)
        answer = await waiters.wait(node, seconds, read, news)
    else:
        answer = await read()
    tag = etag(answer)  # of the references: a secret's value (or a workflow's token) never shapes a header
    if waiters is not None:
        waiters.answered(node, tag, orders(answer))
    answer = with_workflow_tokens(answer, svc.views, svc.key, token_ttl(request), c.now())
    body = c.ENCODER.encode(await secrets.resolved(svc, answer))
    return Response(body, media_type="application/json", headers={"ETag": tag})


def news_since(waiters, node: UUID, known: str | None):
    """What ends a held poll. After an answer this process gave (its ETag), only an order the agent has not had:
    a start or a stop it was not sent, or a change of its volumes; work that merely ended (the agent reported it)
    is no news. After any other ETag, any change; with none, any work."""
    if not known:
        return _work
    sent = waiters.sent(node, known)
    if sent is None:
        return lambda answer: etag(answer) != known
    return lambda answer: not orders(answer) <= sent


def not_pushed(waiters, node: UUID, news):
    """`news`, leaving out answers whose every order was pushed to the node over the agent bus already."""
    return lambda answer: news(answer) and not orders(answer) <= waiters.pushed_orders(node)


def orders(answer: Assignments[Start]) -> frozenset:
    found = {("start", item.allocation_id, item.epoch) for item in answer.start}
    found |= {("stop", item.allocation_id, item.epoch) for item in answer.stop}
    return frozenset(found | {("volumes", tuple(answer.volumes or ()), 0)})


def token_ttl(request: Request) -> timedelta:
    """FB_WORKFLOW_TOKEN's longest life (ROVING_WORKFLOW_TOKEN_TTL); its workflow's end refuses it sooner."""
    return timedelta(seconds=getattr(c.settings(request), "workflow_token_ttl_seconds", 7 * 86400.0))


def _work(answer: Assignments[Start]) -> bool:
    return bool(answer.start or answer.stop)


def etag(answer: Assignments[Start]) -> str:
    """Of what the answer says, not the position it was built at: two workers' equal answers match."""
    return tagged(answer)[1]


def tagged(answer: Assignments[Start]) -> tuple[bytes, str]:
    """The answer encoded without its position, and its ETag (for a caller that needs both)."""
    body = c.ENCODER.encode(msgspec.structs.replace(answer, position=0))
    return body, _tag(body)


def _tag(body: bytes) -> str:
    return '"' + hashlib.blake2b(body, digest_size=12).hexdigest() + '"'


def node_param(request: Request) -> UUID:
    raw = request.query_params.get("node_id", "")
    try:
        return UUID(raw)
    except ValueError:
        raise BadRequest("node_id", f"expected a node id, got {raw!r}") from None


def wait_param(request: Request) -> float:
    """Seconds a long poll may be held: 0 (the default: answer at once) to MAX_WAIT_SECONDS."""
    raw = request.query_params.get("wait", "") or "0"
    try:
        seconds = float(raw)
    except ValueError:
        raise BadRequest("wait", f"expected seconds from 0 to {MAX_WAIT_SECONDS}, got {raw!r}") from None
    if not 0 <= seconds <= MAX_WAIT_SECONDS:  # NaN fails this too
        raise BadRequest("wait", f"expected seconds from 0 to {MAX_WAIT_SECONDS}, got {raw!r}")
    return seconds


async def report(request: Request) -> Response:
    """`started` writes nothing: one the views show running at that epoch on that node is acknowledged from them;
    any other (and every report that writes) is decided by the application."""
    b, svc = await c.body(request, Report), c.services(request)
    agent_only(request, b.node_id)
    b = recorded_as(b)
    if b.event in ADVISORY and await c.call(running_here, svc.views, b):
        return c.json(Ok(ok=True))
    listening = tuple(b.listening) if b.listening is not None else None
    await c.call(svc.roving.report, b.node_id, b.allocation_id, b.epoch, b.event, b.exit_code, b.reason, c.now(),
                 listening)
    return c.json(Ok(ok=True))


MAX_REPORTS = 500  # per request; the agent sends at most 200


@answers(BatchResults)
async def reports(request: Request) -> Response:
    """Each report answered in order as the single route would answer it: `{"results": [{"status": 200}, {"status":
    409, "code": "stale_epoch", "error": ...}, ...]}`. A log outage or lasting contention fails the whole request
    (503: every report is tried again); advisory reports the views show running are acknowledged from them."""
    b, svc = await c.body(request, Reports), c.services(request)
    agent_only(request, b.node_id)
    if len(b.reports) > MAX_REPORTS:
        raise BadRequest("reports", f"at most {MAX_REPORTS} reports a request, not {len(b.reports)}")
    if any(r.node_id != b.node_id for r in b.reports):
        raise BadRequest("reports", "every report must be of the node the request names")
    return c.json(await c.call(decide_reports, svc.roving, svc.views, b, c.now()))


def decide_reports(roving, views, b: Reports, now) -> BatchResults:
    """A batch's results, each as the single route would answer (over HTTP or the agent bus: the same decision)."""
    b.reports = [recorded_as(r) for r in b.reports]
    advisory = [r.event in ADVISORY and running_here(views, r) for r in b.reports]
    decided = [r for r, known in zip(b.reports, advisory, strict=True) if not known]
    refusals = iter(roving.report_all(b.node_id, decided, now) if decided else [])
    return BatchResults([RECORDED if known else _result(next(refusals)) for known in advisory])


RECORDED = BatchResult(200)


def _result(refused: Exception | None) -> BatchResult:
    if refused is None:
        return RECORDED
    status, code = next(((status, code) for kind, status, code in REFUSALS if isinstance(refused, kind)),
                        (400, "invalid"))
    return BatchResult(status, code, str(refused))


REFUSALS = ((StaleEpoch, 409, "stale_epoch"), (NotFound, 404, "not_found"), (Conflict, 409, "conflict"))


def running_here(views, b: Report) -> bool:
    found = views.queue.allocation(b.allocation_id)
    return (found is not None and not found.ended and found.epoch == b.epoch
            and str(b.node_id) in found.nodes)


@answers(Config)
async def config(request: Request) -> Response:
    agent_only(request)
    svc, settings = c.services(request), c.settings(request)
    cap = (await c.call(svc.roving.scheduler_config)).log_max_bytes_per_stage
    # the agent role's URL only: the control plane's credentials could write any event
    return c.json(Config(nats_url=svc.agent_nats_url or None, cluster=svc.cluster or settings.cluster,
                         log_max_bytes_per_stage=cap))


routes = [
    Route("/v4/agent/register", register, methods=["POST"]),
    Route("/v4/agent/heartbeat", heartbeat, methods=["POST"]),
    Route("/v4/agent/assignments", assignments, methods=["GET"]),
    Route("/v4/agent/reports", report, methods=["POST"]),
    Route("/v4/agent/reports:batch", reports, methods=["POST"]),
    Route("/v4/agent/config", config, methods=["GET"]),
]

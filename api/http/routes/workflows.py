"""Workflow routes: submit, list, describe, stop, events (JSON or server-sent), logs, why and explain.

On a federated control plane (api.http.fanout) describe, events, log, why and explain take the id of a workflow
of any member cluster: its owning cluster is found in the hub's federated stream and the answer comes from
that cluster's views (logs from its own log stream), labelled with `cluster`, under the same access
decisions as this cluster's work. Stop on another cluster's workflow is refused (409) naming its cluster.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Annotated, Any, Literal
from uuid import UUID, uuid4, uuid5

import msgspec
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from adapters.federation import FederationError
from adapters.hub_log import read_member_log
from api.http import fields
from api.http.answers import (
    Problem,
    Stopped,
    Validation,
    WorkflowCreated,
    WorkflowDetail,
    WorkflowEvents,
    WorkflowList,
    answers,
)
from api.http.answers.work import activity_event, workflow_detail, workflow_summary
from api.http.errors import BadRequest, problem
from api.http.fanout import Located, locate
from api.http.routes import common as c
from api.http.routes import federation as hub_routes
from api.http.routes import log_follow, log_range, paging
from api.http.routes.names import names
from api.http.routes.why import explain, why
from domain.app import access
from domain.app.errors import NotFound
from projections import workflow_pages as pages
from projections.workflow_pages import ListQuery
from projections.workflows import ORDERS

LIST_PARAMS = ("status", "order_by", "limit", "next", "q", "owner", "since", "until")
ENDED = frozenset({"FINISHED", "FAILED", "CANCELED"})
WORKFLOW_STATUSES = ("PENDING", "STARTED", "FINISHED", "FAILED", "CANCELED")  # domain.workflow.Workflow.status
YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml")
FOLLOW_POLL = 0.25
STRATEGIES: dict[str, Literal["ready", "start"]] = {"ready": "ready", "start": "start"}  # ?endpoint_strategy=
PING_SECONDS = 15.0  # an SSE comment after this much quiet: idle proxies and load balancers keep the stream
REMOTE_POLL = 1.0  # following another cluster's workflow reads the hub this often
MAX_IDEMPOTENCY_KEY = 255
MAX_NAME = 256  # the name is stored in the Submitted event, which must fit one log message
IDEMPOTENCY_NAMESPACE = UUID("5b0f2c43-8f8e-4d2a-9a55-2f3b1f9e7c10")  # workflow ids from (user, Idempotency-Key)


class Submit(msgspec.Struct, forbid_unknown_fields=True):
    definition: str | dict[str, Any]
    name: Annotated[str, msgspec.Meta(max_length=MAX_NAME)] = ""
    priority: int = 0
    preemptible: bool | None = None
    endpoint_strategy: Literal["ready", "start"] | None = None  # a takeover of persistent endpoints in use
    project: fields.Text | None = None  # stands for the definition's own `project:` (`workflow start --project`)
    annotations: fields.Annotations | None = None  # joined to the definition's (a preset's name and digest)


async def submission(request: Request) -> Submit:
    """A JSON body, or a raw Fuzzfile (application/yaml) with name/priority/preemptible in the query."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind not in YAML_TYPES:
        return await c.body(request, Submit)
    text = (await request.body()).decode("utf-8", errors="replace")
    preemptible = c.query_bool(request, "preemptible") if "preemptible" in request.query_params else None
    wanted = request.query_params.get("endpoint_strategy") or None
    strategy = STRATEGIES.get(wanted) if wanted is not None else None
    if wanted is not None and strategy is None:
        raise BadRequest("endpoint_strategy", f"expected ready or start, got {wanted!r}")
    name = request.query_params.get("name", "")
    if len(name) > MAX_NAME:
        raise BadRequest("name", f"expected at most {MAX_NAME} characters, got {len(name)}")
    return Submit(definition=text, name=name, priority=c.query_int(request, "priority") or 0, preemptible=preemptible,
                  endpoint_strategy=strategy, project=request.query_params.get("project") or None)


@answers(WorkflowCreated)
async def submit(request: Request) -> Response:
    """`Idempotency-Key`: the same caller's same key names the same workflow, so a retried submit (after a lost
    answer or a control-plane restart) returns the first answer instead of creating a second workflow."""
    wanted, svc = await submission(request), c.services(request)
    workflow_id = submission_id(request)
    warnings = await c.call(svc.roving.submit_workflow, workflow_id, wanted.name, wanted.definition,
                            wanted.priority, wanted.preemptible, c.principal(request), c.now(),
                            endpoint_strategy=wanted.endpoint_strategy, project=wanted.project,
                            annotations=wanted.annotations)
    await c.settle(request)
    notes = [Problem(path=w.path, message=w.message) for w in warnings or []]
    return c.json(WorkflowCreated(id=str(workflow_id), warnings=notes), status=201)


@answers(Validation)
async def validate(request: Request) -> Response:
    """The submission's checks against this cluster without submitting: 200 {"valid", "errors", "warnings"}, each
    problem naming its field (what submission would refuse, what this cluster would not do as written)."""
    wanted, svc = await submission(request), c.services(request)
    asked = request.query_params.get("cluster")
    if asked and svc.cluster and asked != svc.cluster:  # `?cluster=` names the cluster the caller means to run on
        raise BadRequest("cluster", f"this control plane is cluster {svc.cluster!r}, not {asked!r}: ask that cluster's API")
    found = await c.call(svc.roving.validate_workflow, wanted.definition, c.principal(request))
    notes = {kind: [Problem(path=p.path, message=p.message) for p in problems] for kind, problems in found.items()}
    return c.json(Validation(valid=not found["errors"], errors=notes["errors"], warnings=notes["warnings"]))


def submission_id(request: Request) -> UUID:
    key = request.headers.get("idempotency-key")
    if key is None:
        return uuid4()
    if not 0 < len(key) <= MAX_IDEMPOTENCY_KEY or not key.isprintable():
        raise BadRequest("Idempotency-Key", f"expected 1 to {MAX_IDEMPOTENCY_KEY} printable characters")
    who = c.principal(request)
    return uuid5(IDEMPOTENCY_NAMESPACE, f"{who.user_id or who.username}\n{key}")


async def located(request: Request, allowed: Any = access.view_work) -> Located:
    """The workflow (of this cluster, or of the member cluster that owns it), if the caller may see it (or do what
    `allowed` checks)."""
    return await locate(request, c.uuid_param(request, "id", "workflow"), allowed)


@answers(WorkflowList)
async def list_workflows(request: Request) -> Response:
    """Newest first unless `order_by` says otherwise; at most `limit` rows and, while more remain, `next`: the
    cursor to pass back as `?next=` for the following page. `owner` is a user's name or id, `q` part of the name
    (or the start of the id), `since`/`until` bound the submission time."""
    who, views = c.principal(request), c.services(request).views
    c.only_params(request, LIST_PARAMS)
    query, owner = list_query(request), request.query_params.get("owner") or None
    known = names(request)

    def keep(row: Any) -> bool:
        if owner is not None and owner not in (str(row.owner.user_id), row.submitted_by, known.user(row.owner.user_id)):
            return False
        return access.visible(who, access.work(row.owner, "workflow"))

    organization = None if who.is_cluster_admin else str(who.organization_id or "")  # the cold scan's bound
    rows, after = await c.call(views.workflows.page, query, keep, organization)
    return c.json(WorkflowList(workflows=[workflow_summary(r, known.owner(r.owner)) for r in rows], next=after))


def list_query(request: Request) -> ListQuery:
    """The list's query parameters; a bad one is a 400 naming it."""
    status = c.query_choice(request, "status", WORKFLOW_STATUSES)
    order_by = c.query_choice(request, "order_by", ORDERS, fold=str) or "-submitted"
    limit = c.query_int(request, "limit")
    if limit is not None and not 1 <= limit <= pages.MAX_LIMIT:
        raise BadRequest("limit", f"expected a whole number from 1 to {pages.MAX_LIMIT}, got {limit}")
    q = request.query_params.get("q") or None
    if q is not None and len(q) > pages.MAX_Q:
        raise BadRequest("q", f"expected at most {pages.MAX_Q} characters, got {len(q)}")
    cursor = request.query_params.get("next") or None
    try:
        after = pages.decode(order_by, cursor) if cursor is not None else None
    except pages.BadCursor as error:
        raise BadRequest("next", str(error)) from None
    return ListQuery(status=status, order_by=order_by, limit=limit or pages.DEFAULT_LIMIT, after=after, q=q,
                     since=query_time(request, "since"), until=query_time(request, "until"))


def query_time(request: Request, name: str) -> datetime | None:
    """An ISO 8601 time (a date alone is its midnight; no offset is UTC)."""
    raw = request.query_params.get(name) or None
    if raw is None:
        return None
    try:
        when = datetime.fromisoformat(raw)
    except ValueError:
        raise BadRequest(name, f"expected an ISO 8601 time such as 2026-01-31 or 2026-01-31T12:00:00Z, got {raw!r}") from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


@answers(WorkflowDetail)
async def describe(request: Request) -> Response:
    found = await located(request)
    return c.labelled(workflow_detail(found.detail, owner_names(request, found)), found.label())


def owner_names(request: Request, found: Located) -> dict[str, Any]:
    """The owner's names (user, group, organization), as the views that answer for the workflow know them."""
    return names(request, found.views).owner(found.detail.owner)


@answers(Stopped)
async def stop(request: Request) -> Response:
    workflow_id = c.uuid_param(request, "id", "workflow")
    try:
        await c.call(c.services(request).roving.stop_workflow, workflow_id, c.principal(request), c.now())
    except NotFound:
        found = await locate(request, workflow_id)  # 404 unless another cluster holds one the caller may see
        return elsewhere(found, "stopped")
    await c.settle(request)
    return c.json(Stopped(id=str(workflow_id), stopped=True))


def elsewhere(found: Located, done: str) -> Response:
    """409: the workflow belongs to another cluster, which alone can change it (commands are not forwarded)."""
    url = found.fan.url_of(found.cluster) if found.fan is not None else None
    where = f" at {url}" if url else ""
    return problem(409, f"workflow {found.detail.id} belongs to cluster {found.cluster}: it can be {done} only "
                        f"there (its control plane{where}); this control plane does not forward commands", "id",
                   code="other_cluster", cluster=found.cluster, url=url)


@answers(WorkflowEvents)
async def events(request: Request) -> Response:
    """In the order they happened (`since` and Last-Event-ID count them); with `limit`, at most that many and
    `next` while more remain; `follow=true` streams them as server-sent events instead."""
    found = await located(request)
    detail = found.detail
    if c.query_bool(request, "follow"):
        return StreamingResponse(follow(request, found, resume_from(request)), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache"})
    limit, after = paging.limit(request), paging.after(request, "events", [int])
    rows = await c.call(found.views.workflows.events, detail.id)
    numbered = list(enumerate(rows, start=1))  # the activity number, as `follow` sends it as the event id
    shown, more = pages.after_key(numbered, lambda pair: [pair[0]], "events", limit, after)
    return c.labelled(WorkflowEvents(events=[activity_event(r) for _, r in shown], next=more), found.label())


def resume_from(request: Request) -> int:
    """How many activity rows the client has: `Last-Event-ID` (a reconnecting EventSource sends it) or `?since=`."""
    raw = request.headers.get("last-event-id") or request.query_params.get("since") or "0"
    if not raw.isdigit():
        raise BadRequest("Last-Event-ID", f"expected the id of an activity event (a whole number), got {raw!r}")
    return int(raw)


async def follow(request: Request, found: Located, since: int = 0):
    """Server-sent events: each activity row once with its number as the event id (a client that reconnects with
    Last-Event-ID gets only what followed), a `: ping` comment after PING_SECONDS of quiet so proxies keep the
    connection, then an `end` event when the workflow has ended. Another cluster's workflow is followed through
    the hub, read again every REMOTE_POLL seconds."""
    views, sent, workflow_id = found.views, since, found.detail.id
    quiet_since = time.monotonic()
    while True:
        if found.fan is not None and sent:
            views = await refreshed(found) or views
        rows = await c.call(views.workflows.events, workflow_id)
        for number, row in enumerate(rows[sent:], start=sent + 1):
            yield f"id: {number}\nevent: activity\ndata: ".encode() + c.ENCODER.encode(activity_event(row)) + b"\n\n"
            quiet_since = time.monotonic()
        sent = max(sent, len(rows))
        if time.monotonic() - quiet_since >= PING_SECONDS:
            yield b": ping\n\n"
            quiet_since = time.monotonic()
        detail = await c.call(views.workflows.get, workflow_id)
        if detail is None or detail.status in ENDED:
            yield b"event: end\ndata: " + c.ENCODER.encode({"status": getattr(detail, "status", None)}) + b"\n\n"
            return
        if await request.is_disconnected():
            return
        await asyncio.sleep(FOLLOW_POLL if found.fan is None else REMOTE_POLL)


async def refreshed(found: Located) -> Any:
    """The owning cluster's views after reading the hub again (None: the hub cannot be read just now)."""
    assert found.fan is not None
    try:
        view = await c.call(hub_routes.load_view, found.fan.hub)
    except hub_routes.HubUnavailable:
        return None
    return view.cluster_views(found.cluster)


async def stage_log(request: Request) -> Response:
    found, stage = await located(request), request.path_params["stage"]
    detail = found.detail
    if stage not in {s.name for s in detail.stages}:
        raise NotFound(f"stage {stage!r}")
    if c.query_bool(request, "follow"):  # live, stdout and stderr apart (api.http.routes.log_follow)
        return await log_follow.followed(request, found, stage)
    asked = log_range.window(request)  # by offset (api.http.routes.log_range), or whole
    if found.fan is not None:
        return await member_log(found, stage, asked)
    logs = c.services(request).logs
    if logs is None:
        raise NotFound("logs (this control plane has no log stream)")
    # off the loop: the reader blocks on the log, retrying for up to a minute while it is unreachable
    if asked is not None:
        data, total = await c.call(logs.read_range, str(detail.id), stage, *asked)
        return log_range.ranged(data, total, asked[0])
    text = await c.call(logs.read, str(detail.id), stage)
    return PlainTextResponse(text.decode("utf-8", errors="replace"), headers={log_range.TOTAL: str(len(text))})


async def member_log(found: Located, stage: str, asked: tuple[int, int | None] | None = None) -> Response:
    """The stage's log from its own cluster's log stream, through the hub (503 naming the cluster if it cannot)."""
    assert found.fan is not None
    domain = found.fan.domain_of(found.cluster)
    try:
        text = await c.call(read_member_log, found.fan.hub, domain, found.cluster, str(found.detail.id), stage)
    except (FederationError, TimeoutError, OSError) as error:
        return problem(503, f"the log of workflow {found.detail.id} stays on cluster {found.cluster}, which cannot "
                            f"be read through the hub just now ({error.__class__.__name__}: {error})", "cluster",
                       cluster=found.cluster)
    if asked is not None:
        data, total = log_range.sliced(text, *asked)
        return log_range.ranged(data, total, asked[0], headers={"Roving-Cluster": found.cluster})
    return PlainTextResponse(text.decode("utf-8", errors="replace"),
                             headers={"Roving-Cluster": found.cluster, log_range.TOTAL: str(len(text))})


routes = [
    Route("/v4/workflows", submit, methods=["POST"]),
    Route("/v4/workflows", list_workflows, methods=["GET"]),
    Route("/v4/workflows:validate", validate, methods=["POST"]),
    Route("/v4/workflows/{id}:stop", stop, methods=["PATCH", "POST"]),
    Route("/v4/workflows/{id}", describe, methods=["GET"]),
    Route("/v4/workflows/{id}/events", events, methods=["GET"]),
    Route("/v4/workflows/{id}/log/{stage}", stage_log, methods=["GET"]),
    Route("/v4/workflows/{id}/why", why, methods=["GET"]),
    Route("/v4/workflows/{id}/allocations/{aid}/explain", explain, methods=["GET"]),
]

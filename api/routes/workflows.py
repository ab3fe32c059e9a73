"""Workflow routes: submit, list, describe, stop, events (JSON or server-sent), logs, why and explain."""

from __future__ import annotations

import asyncio
import inspect
from typing import Annotated, Any, Literal
from uuid import UUID, uuid4, uuid5

import msgspec
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from api.errors import BadRequest
from api.routes import common as c
from domain.app import access
from domain.app.errors import NotFound

ENDED = frozenset({"FINISHED", "FAILED", "CANCELED"})
WAITING = frozenset({"PENDING", "WAITING", "READY"})
YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml")
FOLLOW_POLL = 0.25
MAX_IDEMPOTENCY_KEY = 255
MAX_NAME = 256  # the name is stored in the Submitted event, which must fit one log message
IDEMPOTENCY_NAMESPACE = UUID("5b0f2c43-8f8e-4d2a-9a55-2f3b1f9e7c10")  # workflow ids from (user, Idempotency-Key)


class Submit(msgspec.Struct, forbid_unknown_fields=True):
    definition: str | dict[str, Any]
    name: Annotated[str, msgspec.Meta(max_length=MAX_NAME)] = ""
    priority: int = 0
    preemptible: bool | None = None
    endpoint_strategy: Literal["ready", "start"] | None = None  # a takeover of persistent endpoints in use


async def submission(request: Request) -> Submit:
    """A JSON body, or a raw Fuzzfile (application/yaml) with name/priority/preemptible in the query."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind not in YAML_TYPES:
        return await c.body(request, Submit)
    text = (await request.body()).decode("utf-8", errors="replace")
    preemptible = c.query_bool(request, "preemptible") if "preemptible" in request.query_params else None
    strategy = request.query_params.get("endpoint_strategy") or None
    if strategy not in (None, "ready", "start"):
        raise BadRequest("endpoint_strategy", f"expected ready or start, got {strategy!r}")
    name = request.query_params.get("name", "")
    if len(name) > MAX_NAME:
        raise BadRequest("name", f"expected at most {MAX_NAME} characters, got {len(name)}")
    return Submit(definition=text, name=name,
                  priority=c.query_int(request, "priority") or 0, preemptible=preemptible, endpoint_strategy=strategy)


async def submit(request: Request) -> Response:
    """`Idempotency-Key`: the same caller's same key names the same workflow, so a retried submit (after a lost
    answer or a control-plane restart) returns the first answer instead of creating a second workflow."""
    wanted, svc = await submission(request), c.services(request)
    workflow_id = submission_id(request)
    warnings = await c.call(svc.roving.submit_workflow, workflow_id, wanted.name, wanted.definition,
                            wanted.priority, wanted.preemptible, c.principal(request), c.now(),
                            endpoint_strategy=wanted.endpoint_strategy)
    await c.settle(request)
    notes = [{"path": w.path, "message": w.message} for w in warnings or []]
    return c.json({"id": str(workflow_id), "warnings": notes}, status=201)


def submission_id(request: Request) -> UUID:
    key = request.headers.get("idempotency-key")
    if key is None:
        return uuid4()
    if not 0 < len(key) <= MAX_IDEMPOTENCY_KEY or not key.isprintable():
        raise BadRequest("Idempotency-Key", f"expected 1 to {MAX_IDEMPOTENCY_KEY} printable characters")
    who = c.principal(request)
    return uuid5(IDEMPOTENCY_NAMESPACE, f"{who.user_id or who.username}\n{key}")


async def visible_detail(request: Request) -> Any:
    """The workflow detail if the caller may see it (404 otherwise, whatever the reason)."""
    workflow_id = c.uuid_param(request, "id", "workflow")
    detail = await c.call(c.services(request).views.workflows.get, workflow_id)
    if detail is None:
        raise NotFound("workflow")
    access.view_work(c.principal(request), detail.owner)
    return detail


async def list_workflows(request: Request) -> Response:
    who, views = c.principal(request), c.services(request).views

    def visible(row: Any) -> bool:
        return access.visible(who, access.work(row.owner, "workflow"))

    rows = await c.call(views.workflows.list, visible, request.query_params.get("status") or None,
                        request.query_params.get("order_by") or None)
    return c.json({"workflows": rows})


def stage_answer(stage: Any) -> dict[str, Any]:
    return {"name": stage.name, "kind": stage.kind, "status": stage.status, "attempts": stage.attempts,
            "exit_code": stage.exit_code, "node": stage.node, "reason": stage.reason,
            "allocation_id": stage.allocation_id, "priority": stage.priority}


async def describe(request: Request) -> Response:
    d = await visible_detail(request)
    return c.json({"id": d.id, "name": d.name, "status": d.status, "owner": d.owner, "priority": d.priority,
                   "preemptible": d.preemptible, "submitted_by": d.submitted_by, "submitted_at": d.submitted_at,
                   "stages": [stage_answer(s) for s in d.stages]})


async def stop(request: Request) -> Response:
    workflow_id = c.uuid_param(request, "id", "workflow")
    await c.call(c.services(request).roving.stop_workflow, workflow_id, c.principal(request), c.now())
    await c.settle(request)
    return c.json({"id": workflow_id, "stopped": True})


def event_answer(row: Any) -> dict[str, Any]:
    return {"time": row.time, "type": row.type, "stage": row.stage, "message": row.message}


async def events(request: Request) -> Response:
    detail = await visible_detail(request)
    if c.query_bool(request, "follow"):
        return StreamingResponse(follow(request, detail.id), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache"})
    rows = await c.call(c.services(request).views.workflows.events, detail.id)
    return c.json({"events": [event_answer(r) for r in rows]})


async def follow(request: Request, workflow_id: Any):
    """Server-sent events: each activity row once, then an `end` event when the workflow has ended."""
    views, sent = c.services(request).views, 0
    while True:
        rows = await c.call(views.workflows.events, workflow_id)
        for row in rows[sent:]:
            yield b"event: activity\ndata: " + c.ENCODER.encode(event_answer(row)) + b"\n\n"
        sent = len(rows)
        detail = await c.call(views.workflows.get, workflow_id)
        if detail is None or detail.status in ENDED:
            yield b"event: end\ndata: " + c.ENCODER.encode({"status": getattr(detail, "status", None)}) + b"\n\n"
            return
        if await request.is_disconnected():
            return
        await asyncio.sleep(FOLLOW_POLL)


async def stage_log(request: Request) -> Response:
    detail, stage = await visible_detail(request), request.path_params["stage"]
    if stage not in {s.name for s in detail.stages}:
        raise NotFound(f"stage {stage!r}")
    logs = c.services(request).logs
    if logs is None:
        raise NotFound("logs (this control plane has no log stream)")
    found = logs.read(str(detail.id), stage)
    text = await found if inspect.isawaitable(found) else found
    return PlainTextResponse(text.decode("utf-8", errors="replace") if isinstance(text, bytes) else str(text))


def why_answer(stage: Any, why: Any) -> dict[str, Any]:
    if why is None:
        return {"stage": stage.name, "allocation_id": stage.allocation_id, "reason": stage.status,
                "detail": stage.reason or f"stage is {stage.status}", "facts": {}}
    reason = getattr(why.reason, "value", why.reason)
    return {"stage": stage.name, "allocation_id": stage.allocation_id, "reason": reason,
            "detail": why.message or reason, "facts": why.detail}


async def why(request: Request) -> Response:
    detail = await visible_detail(request)
    access.explain_work(c.principal(request), detail.owner)
    everything, store = c.query_bool(request, "all"), c.services(request).views.why
    chosen = [s for s in detail.stages if everything or s.status in WAITING]
    answers = [why_answer(s, store.get(s.allocation_id) if s.allocation_id else None) for s in chosen]
    return c.json({"stages": answers})


async def explain(request: Request) -> Response:
    detail = await visible_detail(request)
    access.explain_work(c.principal(request), detail.owner)
    aid = c.uuid_param(request, "aid", "allocation")
    stage = next((s for s in detail.stages if s.allocation_id == aid), None)
    views = c.services(request).views
    row = await c.call(views.queue.get, aid)
    if row is None or str(row.workflow_id) != str(detail.id):
        raise NotFound("allocation")
    found = views.why.get(aid)
    return c.json({"allocation": row, "stage": stage.name if stage else row.stage,
                   "why": why_answer(stage, found) if stage else found})


routes = [
    Route("/v4/workflows", submit, methods=["POST"]),
    Route("/v4/workflows", list_workflows, methods=["GET"]),
    Route("/v4/workflows/{id}:stop", stop, methods=["PATCH", "POST"]),
    Route("/v4/workflows/{id}", describe, methods=["GET"]),
    Route("/v4/workflows/{id}/events", events, methods=["GET"]),
    Route("/v4/workflows/{id}/log/{stage}", stage_log, methods=["GET"]),
    Route("/v4/workflows/{id}/why", why, methods=["GET"]),
    Route("/v4/workflows/{id}/allocations/{aid}/explain", explain, methods=["GET"]),
]

"""The read-only pages: the queue in effective priority order, endpoints with Connect, the OpenAPI document, audit."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from api.http import scheduled
from api.http.routes import audit, endpoints, openapi, queue
from api.http.ui import render
from api.http.ui.core import Refused, api, csrf_for, with_query
from domain.app import access
from domain.tenancy.permissions import Denied, Principal

QUEUE_STATES = ("", "PENDING", "READY", "RUNNING", "FINISHED", "FAILED", "CANCELED", "PREEMPTED", "EVICTED")
AUDIT_FIELDS = ("since", "until", "principal", "event_type", "node", "workflow")
AUDIT_PAGE = 200
WAITING = ("PENDING", "READY")


def short(value: Any) -> str:
    return str(value or "")[:8]


def may_explain(who: Principal, row: dict[str, Any]) -> bool:
    """Whether the API's `why` would explain this waiting queue row to `who`."""
    if row["state"] not in WAITING:
        return False
    try:
        access.explain_work(who, row)
    except Denied:
        return False
    return True


def estimated_start(request: Request, who: Principal, row: dict[str, Any]) -> str | None:
    """A waiting row's estimated start (the reservation's or a backfill's), for whoever may ask why it waits."""
    found = scheduled.last_pass(request).why(row["id"]) if may_explain(who, row) else None
    return found.detail.get("estimated_start") if found is not None else None


def explanation(request: Request, who: Principal, row: dict[str, Any]) -> tuple[str, Any]:
    """(reason, estimated start): a waiting row's reason is the scheduler's why, and its estimated start the
    reservation's (or a backfill's), shown to whoever the API's `why` would show them to; other rows keep their
    own reason (how they ended) and no estimate."""
    if not may_explain(who, row):
        return row["reason"], ""
    found = scheduled.last_pass(request).why(row["id"])
    if found is None:
        return row["reason"] or "waiting for the scheduler's next pass", "unknown"
    said = getattr(found.reason, "value", found.reason)
    start = found.detail.get("estimated_start")
    text = f"{said}: {found.message}" if found.message and found.message != said else str(said)
    return text, render.when(start) if start else "unknown"


def placed_on(row: dict[str, Any]) -> render.Html:
    return render.joined(render.node_link(n) for n in row["nodes"] or [row["node"]] if n)


async def queue_page(request: Request, who: Principal) -> Response:
    state = request.query_params.get("state", "")
    if state not in QUEUE_STATES:
        raise Refused(400, f"state: expected one of {', '.join(QUEUE_STATES[1:])}, got {state!r}")
    answer = await api(queue.queue, request, state=state)
    rows = [[rank, f"{r['priority']:g}", render.link(f"/ui/workflows/{r['workflow_id']}", short(r["workflow_id"])),
             r["stage"], render.status(r["state"]), r["attempt"], placed_on(r),
             render.when(r["queued_at"]), *explanation(request, who, r)]
            for rank, r in enumerate(answer["queue"], start=1)]
    scope = "only your own work" if answer.get("mine") else "the whole cluster"
    body = render.fill(
        "queue", states=render.options(QUEUE_STATES, state, empty="waiting and running"),
        scope=scope, total=answer.get("total", len(rows)),
        table=render.table(["#", "Priority", "Workflow", "Stage", "State", "Attempt", "Node", "Queued", "Reason",
                            "Estimated start"],
                           rows, "Nothing waits or runs.", id="queue"))
    return render.page("Queue", body, user=who, csrf=csrf_for(request), current="/ui/queue")


def connect(endpoint: dict[str, Any]) -> render.Html:
    """The Connect menu: the URL and how to call it with a token (the proxy reads FB-Authorization)."""
    url = endpoint["url"]
    curl = f'curl -H "FB-Authorization: Bearer $ROVING_TOKEN" {url}'
    return render.Html(render.part("endpoints_parts", "connect")(url, curl))


def binding(endpoint: dict[str, Any]) -> str:
    if not endpoint["workflow_id"]:
        return str(endpoint["reason"] or "")
    workflow = render.link(f"/ui/workflows/{endpoint['workflow_id']}", short(endpoint["workflow_id"]))
    return render.Html(render.part("endpoints_parts", "binding")(workflow, endpoint["service"], endpoint["target"]))


async def endpoints_page(request: Request, who: Principal) -> Response:
    rows = (await api(endpoints.list_endpoints, request))["endpoints"]
    table = render.table(["Name", "Scope", "Status", "Binding", "Connect"],
                         [[e["name"], e["scope"], render.status(e["status"].upper()), binding(e), connect(e)]
                          for e in rows], "No endpoints you may see.", id="endpoints")
    return render.page("Endpoints", table, user=who, csrf=csrf_for(request), current="/ui/endpoints")


def parameters(op: dict[str, Any]) -> str:
    return ", ".join(f"{p['name']} ({p['in']})" for p in op.get("parameters", []))


def body_of(op: dict[str, Any]) -> str:
    content = op.get("requestBody", {}).get("content", {})
    first: dict[str, Any] = next(iter(content.values()), {})
    ref = first.get("schema", {}).get("$ref", "")
    return ref.rpartition("/")[2] or ("JSON" if content else "")


def operation(method: str, path: str, op: dict[str, Any], schemas: dict[str, Any]) -> render.Html:
    codes = ", ".join(sorted(op.get("responses", {})))
    body = body_of(op)
    fields = ", ".join(f"{n}" + ("*" if n in schemas.get(body, {}).get("required", []) else "")
                       for n in schemas.get(body, {}).get("properties", {}))
    return render.Html(render.part("api_parts", "operation")(method, path, op, body, fields, codes, parameters(op)))


async def api_page(request: Request, who: Principal) -> Response:
    """The OpenAPI document the API serves at /v4/openapi.json, for people."""
    doc = await api(openapi.openapi, request)
    schemas = doc.get("components", {}).get("schemas", {})
    groups: dict[str, list[render.Html]] = {}
    for path, methods in sorted(doc["paths"].items()):
        group = "/".join(path.split("/")[:3]) if path.startswith("/v4/") else "/" + path.split("/")[1]
        groups.setdefault(group, []).extend(operation(m, path, op, schemas) for m, op in methods.items())
    body = render.fill("api", version=doc["openapi"], paths=len(doc["paths"]), groups=list(groups.items()))
    return render.page("API", body, user=who, csrf=csrf_for(request), current="/ui/api")


def audit_filters(request: Request) -> dict[str, str]:
    return {k: request.query_params[k] for k in AUDIT_FIELDS if request.query_params.get(k)}


async def audit_page(request: Request, who: Principal) -> Response:
    """The newest rows first (what someone looking into recent activity wants); cluster admins read every row,
    organization owners their organization's, anyone else is told no (403)."""
    filters = audit_filters(request)
    rows = (await api(audit.list_rows, request, **filters, limit=AUDIT_PAGE, order="newest"))["rows"]
    table = render.table(
        ["#", "Time", "Event", "Principal", "Source", "Workflow", "Node", "Aggregate"],
        [[r["position"], render.when(r["time"]), r["event_type"], r["principal"] or "", r["source"] or "",
          render.link(f"/ui/workflows/{r['workflow']}", short(r["workflow"])) if r["workflow"] else "",
          r["node"] or "", f"{r['aggregate_kind']} {short(r['aggregate_id'])} v{r['version']}"] for r in rows],
        "No audit rows match.", id="audit")
    export = "/ui/audit/export.parquet" + (f"?{urlencode(filters)}" if filters else "")
    body = render.fill("audit", fields=AUDIT_FIELDS, filters=filters, export=export, table=table, count=len(rows),
                       limit=AUDIT_PAGE)
    return render.page("Audit", body, user=who, csrf=csrf_for(request), current="/ui/audit")


async def audit_export(request: Request, who: Principal) -> Response:
    """The API's own Parquet export with the page's filters."""
    answer = await audit.export_parquet(with_query(request, **audit_filters(request)))
    if answer.status_code >= 400:
        raise Refused(answer.status_code, "the audit export was refused")
    return answer

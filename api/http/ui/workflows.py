"""Workflow pages: the list (filter, sort), one workflow (stages, dependencies, why, live events) and stage logs."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from api.http.routes import common as c
from api.http.routes import log_range, queue, workflows
from api.http.routes import why as why_routes
from api.http.routes.workflows import ENDED
from api.http.ui import graph, pages, render
from api.http.ui.core import Refused, api, csrf_for, with_query
from domain.tenancy.permissions import Principal

STATUSES = ("PENDING", "STARTED", "FINISHED", "FAILED", "CANCELED")
SORTS = {"submitted": "-submitted", "oldest": "submitted", "priority": "priority", "started": "-submitted",
         "first-started": "-submitted"}
SORT_LABELS = {"submitted": "Submitted (newest first)", "oldest": "Submitted (oldest first)",
               "started": "Started (latest first)", "first-started": "Started (earliest first)",
               "priority": "Priority (highest first)"}
# A column header sorts by its column; clicking the column already sorted by turns the order around.
COLUMN_SORTS = {"Submitted": ("submitted", "oldest"), "Started": ("started", "first-started"),
                "Priority": ("priority", "priority")}
QUEUE_ALL = 10_000
UI_PAGE = 50  # workflows on one list page; the Next link asks for the following ones


def chosen(request: Request, name: str, choices: Any, default: str = "") -> str:
    value = request.query_params.get(name, default) or default
    if value and value not in choices:
        raise Refused(400, f"{name}: expected one of {', '.join(choices)}, got {value!r}")
    return value


async def started_times(request: Request, who: Principal) -> tuple[dict[str, str], dict[str, str]]:
    """(started, estimated): when each workflow's first allocation started, and for one that has not, the
    earliest estimated start of its waiting stages the caller may ask about; from the queue the caller may read."""
    rows = (await api(queue.queue, request, all="true", limit=QUEUE_ALL)).get("queue", [])
    first: dict[str, str] = {}
    estimated: dict[str, str] = {}
    for row in rows:
        wid = str(row["workflow_id"])
        if row.get("started_at"):
            first[wid] = min(first.get(wid, row["started_at"]), row["started_at"])
        elif (guess := pages.estimated_start(request, who, row)) is not None:
            estimated[wid] = min(estimated.get(wid, guess), guess)
    return first, {wid: at for wid, at in estimated.items() if wid not in first}


def started_cell(workflow_id: str, started: dict[str, str], estimated: dict[str, str]) -> render.Html:
    return render.Html(parts("started_cell")(render.when(estimated.get(workflow_id)),
                                             render.when(started.get(workflow_id))))


def parts(name: str) -> Any:
    return render.part("workflows_parts", name)


def sort_header(name: str, sort: str, status: str) -> str | render.Html:
    """A sortable column's header is a link to that sort (the other way round when it is the current one)."""
    if name not in COLUMN_SORTS:
        return name
    first, other = COLUMN_SORTS[name]
    current = sort in (first, other)
    target = other if sort == first else first
    query = urlencode({k: v for k, v in (("status", status), ("sort", target)) if v})
    mark = (" ▼" if sort == first else " ▲") if current else ""
    return render.Html(parts("sort_header")(name, query, mark))


async def list_page(request: Request, who: Principal) -> Response:
    """A page of UI_PAGE workflows (the API's cursor behind the Next link), filtered by status and a name search."""
    status = chosen(request, "status", STATUSES)
    sort = chosen(request, "sort", SORTS, "submitted")
    q, after = request.query_params.get("q", ""), request.query_params.get("next", "")
    answer = await api(workflows.list_workflows, request, status=status, order_by=SORTS[sort], q=q, next=after,
                       limit=UI_PAGE)
    rows = answer["workflows"]
    started, estimated = await started_times(request, who)
    if sort in ("started", "first-started"):  # within the page: the API orders by submission
        rows.sort(key=lambda r: started.get(str(r["id"]), ""), reverse=sort == "started")
        rows.sort(key=lambda r: str(r["id"]) not in started)  # never-started workflows last either way
    headers = [sort_header(name, sort, status) for name in
               ("Name", "Status", "Stages ended", "Priority", "Submitted", "Started", "By")]
    table = render.table(
        headers,
        [[render.link(f"/ui/workflows/{r['id']}", r["name"] or r["id"]), render.status(r["status"]),
          f"{r['stages_ended']}/{r['stage_count']}", r["priority"], render.when(r["submitted_at"]),
          started_cell(str(r["id"]), started, estimated), r["submitted_by"]] for r in rows],
        "No workflows match.", id="workflows")
    body = render.fill("workflows", statuses=render.options(("", *STATUSES), status), q=q,
                       sorts=render.options(tuple(SORTS), sort, SORT_LABELS), table=table, count=len(rows),
                       more=more_link(answer.get("next"), status, sort, q))
    return render.page("Workflows", body, user=who, csrf=csrf_for(request), current="/ui/workflows")


def more_link(after: str | None, status: str, sort: str, q: str) -> render.Html:
    """The Next link to the following page (none on the last), keeping the filters."""
    if not after:
        return render.Html("")
    query = urlencode({k: v for k, v in (("status", status), ("sort", sort), ("q", q), ("next", after)) if v})
    return render.Html(parts("more_link")(query))


async def dependencies(request: Request, workflow_id: str) -> dict[str, list[str]]:
    """Each step's `depends-on` (name and wanted status), from the mirrored definition (read from the log when the
    workflow is cold); called after the API's describe handler has decided the caller may see this workflow."""
    found = await c.call(request.app.state.services.views.workflows.aggregate, workflow_id)
    if found is None:
        return {}
    return {spec.step: [f"{n.name} {n.status}" for n in spec.dependencies] for spec in found.step_specs()}


def needs_of(stage: str, needs: dict[str, list[str]]) -> list[str]:
    return needs.get(stage) or needs.get(stage.split("[")[0]) or []


def attempts_made(stage: dict[str, Any]) -> Any:
    """Attempts that started: the current one once it has, the earlier ones before; "—" for a stage that never ran."""
    made = stage["attempts"] if stage.get("started_at") else stage["attempts"] - 1
    return made if made > 0 else "—"


def moment(value: Any) -> datetime:
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def took(seconds: float) -> str:
    """`0.4s`, `05m 09s`, `1h 02m 03s`."""
    hours, rest = divmod(int(seconds), 3600)
    return (f"{seconds:.1f}s" if seconds < 60 else
            (f"{hours}h " if hours else "") + f"{rest // 60:02d}m {rest % 60:02d}s")


def duration(stage: dict[str, Any], now: datetime) -> str:
    """How long the current attempt ran (or has run so far); empty before it started."""
    if not stage.get("started_at"):
        return ""
    ended = moment(stage["ended_at"]) if stage.get("ended_at") else now
    text = took(max(0.0, (ended - moment(stage["started_at"])).total_seconds()))
    return text if stage.get("ended_at") else f"{text} so far"


def workflow_duration(detail: dict[str, Any], now: datetime) -> str:
    """From submission to its last stage's end (or so far), as sacct's Elapsed."""
    ends = [moment(s["ended_at"]) for s in detail["stages"] if s.get("ended_at")]
    ended = detail["status"] in ENDED
    last = max(ends) if ended and ends else now
    text = took(max(0.0, (last - moment(detail["submitted_at"])).total_seconds()))
    return text if ended else f"{text} so far"


def downloads(detail: dict[str, Any]) -> render.Html:
    """The events as JSON and each stage's log as a file, to keep or attach to a ticket."""
    wid = detail["id"]
    links = [render.link(f"/ui/workflows/{wid}/download/events", "events (JSON)")]
    links += [render.link(f"/ui/workflows/{wid}/download/logs/{s['name']}", f"{s['name']} log")
              for s in detail["stages"]]
    return render.joined(links, " · ")


def stage_rows(detail: dict[str, Any], needs: dict[str, list[str]]) -> list[list[Any]]:
    wid, now = detail["id"], datetime.now(UTC)
    return [[s["name"], s["kind"], render.status(s["status"]), ", ".join(needs_of(s["name"], needs)) or "—",
             render.node_link(s["node"]), attempts_made(s), render.when(s.get("started_at")),
             render.when(s.get("ended_at")), duration(s, now), "" if s["exit_code"] is None else s["exit_code"],
             s["reason"], render.link(f"/ui/workflows/{wid}/logs/{s['name']}", "log")] for s in detail["stages"]]


def actions(request: Request, detail: dict[str, Any]) -> render.Html:
    """Stop while it runs, retry a failed one's unfinished jobs, submit again (as it was, or edited) whatever its
    state: the API decides who may, and a refusal is shown."""
    csrf = render.hidden_csrf(csrf_for(request))
    return render.Html(parts("actions")(detail["id"], csrf, detail["status"] not in ENDED, detail["status"] == "FAILED"))


DONE = {"stopped": "Stop requested: running stages are being canceled.",
        "resubmitted": "Submitted again: this is the new workflow.",
        "retried": "Retried: this new workflow runs the jobs that did not finish."}


def notice(request: Request) -> render.Html:
    done = request.query_params.get("done", "")
    return render.Html(render.macro("notice")(DONE[done]) if done in DONE else "")


def fact(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k} {fact(v)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(fact(v) for v in value)
    return str(value)


def facts(found: dict[str, Any]) -> str:
    """The scheduler's facts as words (`passed over: local held (cordon) 1`); empty ones left out."""
    shown = {k: v for k, v in (found or {}).items() if v not in (None, "", [], {}) and k != "estimated_start"}
    return "; ".join(f"{k.replace('_', ' ')}: {fact(v)}" for k, v in sorted(shown.items()))


def estimated_start(found: dict[str, Any]) -> Any:
    value = (found or {}).get("estimated_start")
    return render.when(value) if value else "unknown"


async def why_rows(request: Request) -> tuple[list[list[Any]], str]:
    """Why each waiting stage waits; a caller who may see but not explain the work is told so, not refused."""
    try:
        answer = await api(why_routes.why, request)
    except Refused as refused:
        if refused.status != 403:
            raise
        return [], f"Why it waits is not shown to you: {refused.message}"
    return [[w["stage"], w["reason"], w["detail"], estimated_start(w["facts"]), facts(w["facts"])]
            for w in answer["stages"]], ""


async def summary(request: Request, detail: dict[str, Any]) -> render.Html:
    """The part of the workflow page the live script re-renders as events arrive."""
    needs = await dependencies(request, detail["id"])
    why, why_note = await why_rows(request)
    used = sorted({s["node"] for s in detail["stages"] if s["node"]})
    return render.fill(
        "workflow_summary", actions=actions(request, detail), duration=workflow_duration(detail, datetime.now(UTC)),
        downloads=downloads(detail), status=render.status(detail["status"]), status_text=detail["status"],
        priority=detail["priority"], submitted_by=detail["submitted_by"], submitted_at=render.when(detail["submitted_at"]),
        nodes=render.joined(render.node_link(n) for n in used) if used else "none yet",
        graph=graph.stage_graph(detail["stages"], {step: [n.rpartition(" ")[0] for n in wanted]
                                                   for step, wanted in needs.items()}),
        stages=render.table(["Stage", "Kind", "Status", "Depends on", "Node", "Attempts", "Started", "Ended", "Duration",
                             "Exit code", "Reason", "Log"],
                            stage_rows(detail, needs), id="stages"),
        why=render.table(["Stage", "Reason", "Detail", "Estimated start", "Facts"], why, why_note or "Nothing waits.", id="why"))


async def detail_page(request: Request, who: Principal) -> Response:
    wid = request.path_params["id"]
    detail = await api(workflows.describe, request)
    part = await summary(request, detail)
    events = (await api(workflows.events, request))["events"]
    rows = [[render.when(e["time"]), e["type"], e["stage"] or "", e["message"]] for e in events]
    body = render.fill("workflow", id=detail["id"], summary=part, notice=notice(request),
                       events=render.table(["Time", "Event", "Stage", "Message"], rows, "No events yet.", id="events"),
                       follow=f"/ui/workflows/{wid}/events?since={len(events)}", fragment=f"/ui/workflows/{wid}/summary")
    return render.page(f"Workflow {detail['name'] or detail['id']}", body, user=who, csrf=csrf_for(request),
                       current="/ui/workflows", script="workflow.js")


async def summary_fragment(request: Request, who: Principal) -> Response:
    part = await summary(request, await api(workflows.describe, request))
    return Response(part, media_type="text/html; charset=utf-8", headers={"Cache-Control": "no-store"})


async def follow(request: Request, who: Principal) -> Response:
    """The API's own server-sent events for this workflow (same handler, same visibility check)."""
    return await workflows.events(with_query(request, follow="true", since=request.query_params.get("since")))


LOG_TAIL = 256 * 1024  # bytes of a log its page opens on (the end); earlier parts and the whole log on request


async def log_page(request: Request, who: Principal) -> Response:
    """The last part of the stage's log, with "load earlier", a download of the whole, and follow (log.js reads
    only the bytes after those it has)."""
    wid, stage = request.path_params["id"], request.path_params["stage"]
    answer = await workflows.stage_log(with_query(request, offset=str(-LOG_TAIL)))
    start, total = answer.headers[log_range.OFFSET], answer.headers[log_range.TOTAL]
    source = f"/ui/workflows/{wid}/logs/{stage}.txt"
    body = render.fill("log", workflow=render.link(f"/ui/workflows/{wid}", "back to the workflow"),
                       text=bytes(answer.body).decode("utf-8", errors="replace"), source=source, start=start,
                       total=total, download=f"{source}?download=true", hidden=render.Html("hidden" if start == "0" else ""),
                       shown=f"showing the last {int(total) - int(start):,} of {int(total):,} bytes")
    return render.page(f"Log of {stage}", body, user=who, csrf=csrf_for(request), current="/ui/workflows",
                       script="log.js")


async def log_raw(request: Request, who: Principal) -> Response:
    """The log as it was written (`offset`/`limit` as the API takes them); `download=true` saves it as a file."""
    answer = await workflows.stage_log(request)
    headers = {"Cache-Control": "no-store",
               **{k: answer.headers[k] for k in (log_range.TOTAL, log_range.OFFSET) if k in answer.headers}}
    if request.query_params.get("download") == "true":
        name = f"{file_part(request.path_params['id'])}-{file_part(request.path_params['stage'])}.log"
        headers["Content-Disposition"] = f'attachment; filename="{name}"'
    return Response(bytes(answer.body), status_code=answer.status_code, media_type=log_range.MEDIA_TYPE,
                    headers=headers)


def file_part(text: str) -> str:
    """A path parameter as part of a download's file name: nothing that could end the header's quoting."""
    return "".join(ch if ch.isascii() and (ch.isalnum() or ch in "-_[]") else "_" for ch in text)[:200]


async def download_events(request: Request, who: Principal) -> Response:
    """The workflow's events as the API answers them, as a file (`workflow-<id>-events.json`)."""
    answer = await workflows.events(request)
    if answer.status_code >= 400:
        return answer
    name = f"workflow-{file_part(request.path_params['id'])}-events.json"
    return Response(bytes(answer.body), media_type="application/json",
                    headers={"Content-Disposition": f'attachment; filename="{name}"', "Cache-Control": "no-store"})


async def download_log(request: Request, who: Principal) -> Response:
    """A stage's whole log as a file (`<workflow id>-<stage>.log`)."""
    return await log_raw(with_query(request, download="true"), who)

"""The dashboard: queue depth by state, nodes by status and hold, what runs and waits, the scheduler's last pass."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from api.http.routes import common as c
from api.http.routes import nodes, queue
from api.http.ui import history, render
from api.http.ui.core import api, csrf_for
from domain.app import access
from domain.tenancy.permissions import Principal

WAITING = ("PENDING", "READY")


def tiles(pairs: list[tuple[str, Any]], id: str) -> render.Html:
    return render.Html(render.macro("tiles")(pairs, id))


def hold_state(node: dict[str, Any]) -> str:
    """The strongest hold on a node: deprovision, evict, cordon, or none."""
    effects = {h["effect"] for h in node["holds"]}
    return next((e for e in ("deprovision", "evict", "cordon") if e in effects), "no hold")


def pass_figures(last: dict[str, Any], names: dict[str, str]) -> list[list[Any]]:
    return [[key.replace("_", " "), reservation(value, names) if key == "reservation" else figure(key, value)]
            for key, value in sorted(last.items())]


def figure(key: str, value: Any) -> Any:
    return render.when(value) if key.endswith("_at") and value else value


def reservation(value: Any, names: dict[str, str]) -> Any:
    """The head job's reservation in words: which allocation, on which nodes, from when."""
    if not isinstance(value, dict):
        return value or "none"
    held = [render.node_link(names[str(n)]) if str(n) in names else str(n)[:8] for n in value.get("node_ids", [])]
    start = value.get("estimated_start")
    return render.Html(render.part("dashboard_parts", "reservation")(
        str(value.get("allocation_id", ""))[:8], render.joined(held) if held else "", render.when(start)))


def visible_allocations(request: Request, who: Principal) -> list[Any]:
    """Every allocation (waiting, running or ended) the caller may see, as the queue route decides it."""
    view = request.app.state.services.views.queue
    return [a for a in view.allocations()
            if access.visible(who, access.work(view.owner(a.workflow_id), "workflow"))]


def scope_of(who: Principal, cluster: str) -> str:
    return (f"the whole cluster {cluster}" if who.is_cluster_admin
            else f"your work only ({who.username}): what the API shows you")


async def charts(request: Request, who: Principal, total_cpu: int) -> render.Html:
    """Queue depth and CPU allocated over the last hour: Prometheus for admins when it runs, else the log."""
    url, now = getattr(request.app.state.services, "prometheus_url", ""), datetime.now(UTC)
    source = "the log"
    if url and who.is_cluster_admin:
        try:
            waiting, running, cpu = await c.call(history.from_prometheus, url, now)
            source = "Prometheus"
        except (OSError, ValueError, KeyError, IndexError):
            url = ""
    if source == "the log":
        waiting, running, cpu = await c.call(history.from_log, visible_allocations(request, who), total_cpu, now)
    return render.Html(render.part("dashboard_parts", "history")(
        [history.chart("chart-queue", "Queue depth, last hour", [waiting, running]),
         history.chart("chart-cpu", "CPU allocated, % of the nodes' cores", [cpu])], source))


async def dashboard(request: Request, who: Principal) -> Response:
    stats = await api(queue.stats, request)
    rows = (await api(nodes.list_nodes, request))["nodes"]
    depth = stats.get("depth", {})
    if not who.is_cluster_admin:  # a tenant's counts are their own work, not the cluster's
        mine = (await api(queue.queue, request, limit=10_000)).get("queue", [])
        depth = dict(Counter(r["state"] for r in mine))
    work = [("running", depth.get("RUNNING", 0)), ("pending", sum(depth.get(s, 0) for s in WAITING))]
    by_status = Counter(n["status"] for n in rows)
    by_hold = Counter(hold_state(n) for n in rows)
    names = {str(n["id"]): n["name"] for n in rows}
    body = render.fill(
        "dashboard", work=tiles(work, "work"), depth=tiles(list(depth.items()), "depth"),
        node_status=tiles(sorted(by_status.items()), "node-status"), node_holds=tiles(sorted(by_hold.items()), "holds"),
        last_pass=render.table(["figure", "value"], pass_figures(stats.get("last_pass") or {}, names),
                               "The scheduler has not made a pass yet.", id="last-pass"),
        priority=stats.get("priority", ""), cluster=request.app.state.settings.cluster,
        scope=scope_of(who, request.app.state.settings.cluster),
        history=await charts(request, who, sum(n["cpu"] for n in rows if n["status"] != "OFFLINE")))
    return render.page("Dashboard", body, user=who, csrf=csrf_for(request), current="/ui/")

"""The nodes page: status, capacity, holds (source, reason, who, when) and, for admins, the hold actions."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from api.http.routes import nodes
from api.http.ui import provisioned, render
from api.http.ui.core import Refused, api, csrf_for
from domain.tenancy.permissions import Principal

MAX_REASON = 500
DONE = {"cordon": "Cordoned", "uncordon": "Uncordoned", "evict": "Evicting work from",
        "deprovision": "Deprovisioning"}


def holds_cell(node: dict[str, Any]) -> render.Html:
    return render.Html(parts("holds")(node["holds"], [render.when(h["at"]) for h in node["holds"]]))


def parts(name: str) -> Any:
    return render.part("nodes_parts", name)


def actions(node: dict[str, Any], csrf: str, back: str = "list") -> render.Html:
    """The admin's forms; `back` says where the answer returns to (the list, or the node's own page)."""
    hidden = render.Html(parts("back")(render.hidden_csrf(csrf), back))
    return render.fill("node_actions", name=node["name"], path=quote(node["name"], safe=""), csrf=hidden)


def used(node: dict[str, Any], what: str) -> render.Html:
    """`2 of 4 used, 2 free` for cpu and memory; one line per device kind (GPUs); from the node's answer."""
    show = memory if what == "memory" else str
    if what != "devices":
        total, taken, free = node[what], node["allocated"][what], node["free"][what]
        return render.Html(parts("used")(show(taken), show(total), free, show(free)))
    lines = [(kind, node["allocated"]["devices"].get(kind, 0), count, node["free"]["devices"].get(kind, count))
             for kind, count in node["devices"].items()]
    return render.Html(parts("devices")(lines))


def memory(value: Any) -> str:
    try:
        return f"{int(value) / 2**30:.1f} GiB"
    except (TypeError, ValueError):
        return str(value or "")


async def nodes_page(request: Request, who: Principal) -> Response:
    rows, csrf = (await api(nodes.list_nodes, request))["nodes"], csrf_for(request)
    admin = who.is_cluster_admin
    made = provisioned.made_by(request)
    headers = ["Node", "Status", "CPU", "Memory", "Devices", "Allocations", "Accepts work", "Holds", "Provisioner"] + (
        ["Actions"] if admin else [])
    table = render.table(headers, [
        [render.Html(parts("node_name")(n["name"], quote(n["name"], safe=""))),
         render.status(n["status"]), used(n, "cpu"), used(n, "memory"), used(n, "devices"), len(n["allocations"]),
         "yes" if n["accepts_new_work"] else "no", holds_cell(n), provisioned.cell(made, n["name"])]
        + ([actions(n, csrf)] if admin else [])
        for n in rows], "No nodes have registered.", id="nodes")
    body = notice(request) + table + provisioned.section(request)
    return render.page("Nodes", render.Html(body), user=who, csrf=csrf, current="/ui/nodes")


def notice(request: Request) -> render.Html:
    """What the last action did, after its redirect (`?done=cordon&node=n1`)."""
    done, node = request.query_params.get("done", ""), request.query_params.get("node", "")
    return render.Html(parts("done")(DONE[done], node) if done in DONE and node else "")


async def node_page(request: Request, who: Principal) -> Response:
    """One node: its facts, holds, the admin's actions and its event log (newest first)."""
    node = await api(nodes.show, request)
    log = await api(nodes.node_events, request)
    facts = render.table(["Status", "CPU", "Memory", "Devices", "Allocations", "Accepts work", "Holds"],
                         [[render.status(node["status"]), used(node, "cpu"), used(node, "memory"), used(node, "devices"),
                           len(node["allocations"]),
                           "yes" if node["accepts_new_work"] else "no", holds_cell(node)]], id="node")
    events = render.table(["Time", "Event", "By", "What happened", "Allocation"],
                          [[render.when(e["at"]), e["type"], e["by"], e["message"], (e["allocation"] or "")[:8]]
                           for e in log["events"]], "No events recorded for this node.", id="node-events")
    admin = render.Html(parts("admin")(actions(node, csrf_for(request), "node")) if who.is_cluster_admin else "")
    body = render.fill("node", notice=notice(request), facts=facts, actions=admin, events=events, count=len(log["events"]))
    return render.page(f"Node {node['name']}", body, user=who, csrf=csrf_for(request), current="/ui/nodes")


async def act(request: Request, who: Principal) -> Response:
    """One admin action from the nodes page; the application decides who may (a tenant is refused, 403)."""
    action, fields = request.path_params["action"], request.state.form
    reason = fields.get("reason", "").strip()
    if len(reason) > MAX_REASON:
        raise Refused(400, f"reason: expected at most {MAX_REASON} characters, got {len(reason)}")
    if action in ("cordon", "evict"):
        await nodes.command(request, action, reason)
    elif action == "uncordon":
        await nodes.command(request, "uncordon")
    elif action == "deprovision":
        await nodes.command(request, "deprovision", fields.get("evict") == "on", False)
    else:
        raise Refused(404, f"Not found: no node action {action!r}.")
    node = request.path_params["id"]
    query = urlencode({"done": action, "node": node})
    back = f"/ui/nodes/{quote(node, safe='')}" if fields.get("back") == "node" else "/ui/nodes"
    return RedirectResponse(f"{back}?{query}", status_code=303)

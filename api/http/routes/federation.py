"""Federation routes: every member cluster's workflows, queue stats and events, read from the hub.

    GET /v4/federation/status                       the hub's federated stream and each member's state
    GET /v4/federation/queue/stats?cluster=a,b      per cluster: availability, events, workflows, allocations
    GET /v4/federation/workflows?cluster=...        every workflow with its cluster and replayed status
    GET /v4/federation/workflows/{id}               one workflow, from the cluster that owns it
    GET /v4/federation/workflows/{id}/events        its (and its allocations') events, from the owning cluster

Only a cluster admin may ask (anyone else: 403). The control plane must know the hub
(`ROVING_FEDERATION_HUB`), else 503 naming the setting. `cluster` may be repeated or comma-separated; a
cluster the federation does not know is a 400 naming it. Each request connects to the hub once, reads
the member states and what arrived in the federated stream since the last request into the process's
FederatedView of that hub (adapters.hub_log.HubReader), and closes the connection. A member that is down
is answered with `"available": false`, `"stale": true` and the age of what the hub last held, never as
an empty cluster. `queue show|stats` and `workflow ...` fan out through the same view (api.http.fanout).
"""

from __future__ import annotations

import threading
from typing import Any

import msgspec
import nats.errors
import nats.js.errors
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from adapters.federation import FederationError
from adapters.hub_log import HubReader
from adapters.jetstream.subjects import check_cluster_name
from api.http import answers as shapes
from api.http.errors import BadRequest, problem
from api.http.routes import common as c
from domain.app import access
from projections.federated import FederatedView, UnknownWorkflow, parse_clusters

TIMEOUT = 2.0  # seconds for each hub answer
NOT_CONFIGURED = ("federation is not configured on this control plane: set ROVING_FEDERATION_HUB to the hub "
                  "nats-server URL (the --hub of `roving federate`) and restart it")


class HubUnavailable(Exception):
    """The hub could not be read; the message says why and what to do (answered 503). `last_view` is what an
    earlier read of it held, if any: fan-out answers show it, every member stale, rather than nothing."""

    def __init__(self, message: str, last_view: FederatedView | None = None) -> None:
        super().__init__(message)
        self.last_view = last_view


_readers: dict[tuple[str, float], HubReader] = {}
_readers_lock = threading.Lock()


def load_view(hub: str, timeout: float = TIMEOUT) -> FederatedView:
    """The process's FederatedView of the hub, brought up to date, with each member's status.
    Blocking: call in the threadpool."""
    with _readers_lock:
        reader = _readers.setdefault((hub, timeout), HubReader(hub, timeout))
    last = reader.view if reader.view.position else None
    try:
        return reader.refresh()
    except FederationError as error:
        raise HubUnavailable(str(error), last) from None
    except nats.js.errors.APIError as error:
        raise HubUnavailable(f"the hub at {hub} refused: {error.description or error}", last) from None
    except (TimeoutError, nats.errors.Error) as error:
        raise HubUnavailable(f"the hub at {hub} stopped answering ({error.__class__.__name__}): "
                             "check the hub nats-server", last) from None


# -- request helpers -----------------------------------------------------------------------------------
def hub_of(request: Request) -> str:
    """The hub URL, once the caller is known to be a cluster admin (403 otherwise; 503 when not configured)."""
    access.federation_reader(c.principal(request))
    hub = getattr(c.settings(request), "federation_hub", None)
    if not hub:
        raise HTTPException(503, NOT_CONFIGURED)
    return hub


def clusters_of(request: Request, known: list[str] | None = None) -> list[str] | None:
    """`?cluster=a,b&cluster=c` -> ['a', 'b', 'c']; none -> None (every cluster). A bad name is a 400, and so
    is one outside `known` (when given), naming it and the clusters there are."""
    wanted = parse_clusters(request.query_params.getlist("cluster"))
    for name in wanted or []:
        try:
            check_cluster_name(name)
        except ValueError as error:
            raise BadRequest("cluster", str(error)) from None
        if known is not None and name not in known:
            raise BadRequest("cluster", f"unknown cluster {name!r}: the federation has "
                                        f"{', '.join(known) or 'no clusters yet'}")
    return wanted


async def view_of(request: Request, need_stream: bool = True) -> FederatedView:
    hub = hub_of(request)
    clusters_of(request)  # a bad ?cluster= is a 400 before the hub is asked
    try:
        view = await c.call(load_view, hub)
    except HubUnavailable as error:
        raise HTTPException(503, str(error)) from None
    if need_stream and view.status is not None and not view.status.exists:
        raise HTTPException(503, f"the hub at {hub} has no federated stream {view.status.stream}: create it with "
                                 "`roving federate --hub URL --member CLUSTER=DOMAIN ...`")
    clusters_of(request, view.known())
    return view


def clusters(view: FederatedView, scope: list[str] | None) -> list[dict[str, Any]]:
    """Every cluster in scope with its availability and how many of its events the hub holds."""
    return [{"cluster": name, **view.availability(name), "events": count}
            for name, count in view.events_per_cluster(scope).items()]


def describe(view: FederatedView, workflow_id: str, scope: list[str] | None) -> dict[str, Any]:
    """One workflow as its owning cluster replayed it; UnknownWorkflow when no cluster in scope has it."""
    cluster = view.owner_of(workflow_id, scope)
    with view.lock:
        state = view.clusters.get(cluster)
        wf = state.workflows.get(workflow_id) if state else None
        answer: dict[str, Any] = {"id": workflow_id, "cluster": cluster, **view.availability(cluster)}
        if wf is None:  # only its allocations reached the hub so far
            return {**answer, "name": None, "status": None, "stages": []}
        stages = [{"name": name, "status": getattr(s.status, "value", str(s.status)), "attempt": s.attempt,
                   "node": s.node, "exit_code": s.exit_code, "reason": s.reason} for name, s in wf.stages.items()]
        return {**answer, "id": str(wf.id), "name": wf.name, "status": wf.status, "version": wf.version,
                "priority": getattr(wf, "priority", None), "owner": _plain(getattr(wf, "owner", None)),
                "submitted_by": getattr(wf, "submitted_by", None),
                "submitted_at": _plain(getattr(wf, "submitted_at", None)),
                "canceled_reason": getattr(wf, "canceled_reason", None), "stages": stages}


def _plain(value: Any) -> Any:
    return msgspec.to_builtins(value, enc_hook=str)


def not_found(error: UnknownWorkflow) -> Response:
    return problem(404, str(error), "id")


# -- routes --------------------------------------------------------------------------------------------
async def status(request: Request) -> Response:
    """The hub's federated stream and each member cluster's state."""
    view = await view_of(request, need_stream=False)
    scope = clusters_of(request)
    federation = view.status
    assert federation is not None
    members = [m.to_dict() for m in federation.members if scope is None or m.cluster in scope]
    return c.json(shapes.FederationStatus(hub=federation.hub, stream=federation.stream, exists=federation.exists,
                                          messages=federation.messages, members=members,
                                          clusters=clusters(view, scope)))


async def queue_stats(request: Request) -> Response:
    """Per cluster in scope: availability, events, workflows by status, allocations by state."""
    view = await view_of(request)
    return c.json(shapes.FederationStats(clusters=view.queue_stats(clusters_of(request))))


async def workflows(request: Request) -> Response:
    """Every federated workflow with its cluster and replayed status."""
    view = await view_of(request)
    scope = clusters_of(request)
    summary = clusters(view, scope)
    available = {row["cluster"]: row["available"] for row in summary}
    rows = [{**row, "available": available.get(row["cluster"])} for row in view.workflows(scope)]
    return c.json(shapes.FederatedWorkflows(clusters=summary, workflows=rows))


async def workflow(request: Request) -> Response:
    """One workflow, described by the cluster that owns it."""
    view = await view_of(request)
    try:
        return c.json(describe(view, request.path_params["id"], clusters_of(request)))
    except UnknownWorkflow as error:
        return not_found(error)


async def workflow_events(request: Request) -> Response:
    """A workflow's and its allocations' events, from the cluster that owns it."""
    view = await view_of(request)
    try:
        return c.json(view.events(request.path_params["id"], clusters_of(request)))
    except UnknownWorkflow as error:
        return not_found(error)


routes = [
    Route("/v4/federation/status", status, methods=["GET"]),
    Route("/v4/federation/queue/stats", queue_stats, methods=["GET"]),
    Route("/v4/federation/workflows", workflows, methods=["GET"]),
    Route("/v4/federation/workflows/{id}/events", workflow_events, methods=["GET"]),
    Route("/v4/federation/workflows/{id}", workflow, methods=["GET"]),
]

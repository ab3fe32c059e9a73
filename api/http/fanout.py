"""Fan-out reads on a federated control plane: which clusters a request covers and whose views answer each.

A control plane with `ROVING_FEDERATION_HUB` set answers `queue show|stats` for every cluster of the
federation and `workflow describe|events|log|why` for a workflow of any of them. Its own cluster answers
from its own views (the freshest); every other one from the hub's FederatedView, which feeds each member's
events into that member's own projections. `?cluster=` (repeated or comma-separated) scopes a request; a
name the federation does not know is a 400 naming it. When the hub cannot be read, this cluster still
answers and every other cluster in scope is listed as unavailable and stale with the reason, with what an
earlier read of the hub held of it (and its age) if there was one, never dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from starlette.exceptions import HTTPException
from starlette.requests import Request

from api.http.routes import common as c
from api.http.routes import federation as hub_routes
from domain.app import access
from domain.app.errors import NotFound
from projections.federated import FederatedView
from projections.views import Views


def local_cluster(request: Request) -> str:
    return c.services(request).cluster or c.settings(request).cluster


def hub_url(request: Request) -> str | None:
    return getattr(c.settings(request), "federation_hub", None) or None


@dataclass
class Fanout:
    """One request's federation: this cluster, the hub's view and the scope. With `error` (the hub could not be
    read just now) `view` is the last one read, or None."""

    local: str
    local_views: Views
    hub: str
    view: FederatedView | None
    error: str | None
    scope: list[str]

    def views(self, cluster: str) -> Views | None:
        """The projections that answer for `cluster` (None: the hub holds nothing of it, or is unreadable)."""
        if cluster == self.local:
            return self.local_views
        return self.view.cluster_views(cluster) if self.view is not None else None

    def summary(self, cluster: str) -> dict[str, Any]:
        """The cluster's label for every answer: can it be asked, is what we show of it stale, and how old."""
        if cluster == self.local:
            return {"cluster": cluster, "local": True, "available": True, "state": "local", "stale": False,
                    "error": None}
        if self.error is not None:
            fresh = self.view.freshness(cluster) if self.view is not None else {
                "last_event_at": None, "last_event_age_seconds": None}
            return {"cluster": cluster, "local": False, "available": False, "state": "unavailable", "stale": True,
                    "error": f"the hub cannot be read: {self.error}", **fresh}
        assert self.view is not None
        return {"cluster": cluster, "local": False, **self.view.availability(cluster)}

    def domain_of(self, cluster: str) -> str:
        """The member's JetStream domain (its cluster id when the hub does not say otherwise)."""
        member = self._member(cluster)
        return member.domain if member is not None else cluster

    def url_of(self, cluster: str) -> str | None:
        """The member's control-plane URL, when `roving federate --api CLUSTER=URL` recorded one."""
        member = self._member(cluster)
        return getattr(member, "api_url", None) if member is not None else None

    def _member(self, cluster: str) -> Any:
        status = self.view.status if self.view is not None else None
        return next((m for m in status.members if m.cluster == cluster), None) if status is not None else None

    def hub_answer(self) -> dict[str, Any]:
        return {"url": self.hub, "available": self.error is None, "error": self.error}


async def fanout(request: Request) -> Fanout | None:
    """The request's federation, or None on a control plane without a hub (where `?cluster=` may name only
    this cluster: anything else is a 400 naming it)."""
    local, hub = local_cluster(request), hub_url(request)
    if hub is None:
        hub_routes.clusters_of(request, [local])
        return None
    hub_routes.clusters_of(request)  # a malformed name is a 400 before the hub is asked
    view, error = None, None
    try:
        view = await c.call(hub_routes.load_view, hub)
    except hub_routes.HubUnavailable as problem:
        view, error = problem.last_view, str(problem)
    known = sorted({local, *view.known()}) if view is not None else None
    wanted = hub_routes.clusters_of(request, known)
    scope = wanted if wanted is not None else (known or [local])
    return Fanout(local, c.services(request).views, hub, view, error, scope)


def remote_owner(fan: Fanout, workflow_id: UUID) -> str | None:
    """The cluster (other than this one) whose events hold the workflow, within the scope; None if none."""
    if fan.view is None:
        return None
    with fan.view.lock:
        cluster = fan.view.owner.get(workflow_id)
    return cluster if cluster is not None and cluster != fan.local and cluster in fan.scope else None


@dataclass
class Located:
    """A workflow the caller may see, the cluster that owns it and the views that answer for it; `fan` is set
    when it lives on another cluster (then `cluster` names that one)."""

    detail: Any
    views: Views
    cluster: str
    fan: Fanout | None = None

    @property
    def remote(self) -> bool:
        return self.fan is not None

    def label(self) -> dict[str, Any]:
        """What a remote answer adds: its cluster, whether it can be asked and how old its data is."""
        return self.fan.summary(self.cluster) if self.fan is not None else {}


async def locate(request: Request, workflow_id: UUID, allowed: Callable[[Any, Any], None] = access.view_work) -> Located:
    """This cluster's workflow, else (on a federated control plane) the one of the cluster whose events hold
    it; either way the caller must pass `allowed` on its owner (domain.app.access's `view_work` unless the route
    asks another: `why` and `explain` ask `explain_workflow`, which an explain_allocation grant passes; 404 else)."""
    views = c.services(request).views
    detail = await c.call(views.workflows.get, workflow_id)
    cluster, fan = local_cluster(request), None
    if detail is None and hub_url(request) is not None:
        fan = await fanout(request)
        if fan is not None and fan.view is None:  # never read: its clusters are not known
            raise HTTPException(503, f"workflow {workflow_id} is not on cluster {cluster}, and the hub that would "
                                     f"find its cluster cannot be read: {fan.error}")
        owner = remote_owner(fan, workflow_id) if fan is not None else None
        found = fan.views(owner) if fan is not None and owner is not None else None
        if found is not None:
            views, cluster = found, owner or cluster
            detail = await c.call(views.workflows.get, workflow_id)
    if detail is None:
        raise NotFound("workflow")
    allowed(c.principal(request), detail.owner)
    return Located(detail, views, cluster, fan if cluster != local_cluster(request) else None)

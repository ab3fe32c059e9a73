"""Persistent endpoint routes: create, list, show, delete (the proxy itself is `api.http.routes.proxy`)."""

from __future__ import annotations

from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from api.http import answers as shapes
from api.http.answers import answers
from api.http.routes import common as c
from api.http.wake import pool_of
from domain.app import access
from domain.app.errors import NotFound
from domain.endpoint import Endpoint
from domain.promql import SERVICE_LABEL, WORKFLOW_LABEL


class CreateEndpoint(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    scope: str = "user"
    owner_kind: str = "user"
    owner_id: str = ""


def answer(e: Endpoint, base_url: str = "") -> shapes.Endpoint:
    binding, pending, bound, targets = e.serving_target(), e.pending, e.binding, e.serving_targets()
    return shapes.Endpoint(
        id=str(e.id), name=e.name, owner_kind=e.owner_kind.value, owner_id=e.owner_id,
        scope=e.scope.value, path=f"/endpoints/{e.name}/", url=f"{base_url}/endpoints/{e.name}/",
        status="serving" if binding else "unready" if bound else "pending" if pending else "unbound",
        workflow_id=str(binding.workflow_id) if binding else None, service=binding.service if binding else None,
        target=targets[0] if targets else None, targets=targets,
        pending_workflow_id=str(pending.workflow_id) if pending else None,
        reason=e.not_serving_reason(), last_failure=e.last_failure,
    )


def base_url(request: Request) -> str:
    return str(request.base_url).rstrip("/")


async def visible(request: Request) -> Endpoint:
    found = await c.call(c.services(request).views.endpoints.find, request.path_params["id"])
    if found is None or found.deleted:
        raise NotFound("endpoint")
    access.check_visible(c.principal(request), found, "endpoint")
    return found


@answers(shapes.Endpoint)
async def create(request: Request) -> Response:
    wanted, svc = await c.body(request, CreateEndpoint), c.services(request)
    eid = await c.call(svc.roving.create_endpoint, wanted.name, wanted.owner_kind, wanted.scope,
                       c.principal(request), c.now(), owner_id=wanted.owner_id)
    await c.settle(request)
    found = await c.call(svc.views.endpoints.find, eid)
    return c.json(answer(found, base_url(request)) if found else {"id": eid, "name": wanted.name}, status=201)


@answers(shapes.EndpointList)
async def list_endpoints(request: Request) -> Response:
    who = c.principal(request)
    rows = await c.call(c.services(request).views.endpoints.list, lambda e: access.visible(who, e))
    return c.json(shapes.EndpointList(endpoints=[answer(e, base_url(request)) for e in rows]))


@answers(shapes.Endpoint)
async def show(request: Request) -> Response:
    return c.json(answer(await visible(request), base_url(request)))


@answers(shapes.Deleted)
async def delete(request: Request) -> Response:
    found = await visible(request)
    await c.call(c.services(request).roving.delete_endpoint, found.id, c.principal(request), c.now())
    await c.settle(request)
    return c.json(shapes.Deleted(id=str(found.id), deleted=True))


@answers(list[shapes.TargetGroup])
async def scrape_targets(request: Request) -> Response:
    """Prometheus HTTP service discovery of the replicas whose autoscaler queries their own metrics: one group a
    ready replica, at its endpoint port, labelled with the workflow and service Roving's query matchers select."""
    access.service_targets_reader(c.principal(request))
    views = c.services(request).views
    return c.json(await c.call(replica_targets, views))


def replica_targets(views: Any) -> list[dict[str, Any]]:
    with views.endpoints.lock:
        endpoints = [e for e in views.endpoints.mirror.values() if not e.deleted and e.binding is not None]
    groups = []
    for endpoint in endpoints:
        workflow, service = str(endpoint.binding.workflow_id), endpoint.binding.service
        pool = pool_of(views, endpoint.binding.workflow_id, service)
        if pool is None or not any(m.query for m in pool.rule.metrics):
            continue
        labels = {WORKFLOW_LABEL: workflow, SERVICE_LABEL: service, "roving_endpoint": endpoint.name}
        groups += [{"targets": [target], "labels": labels} for target in endpoint.reachable_targets()]
    return groups


routes = [
    Route("/v4/endpoints", create, methods=["POST"]),
    Route("/v4/endpoints", list_endpoints, methods=["GET"]),
    Route("/v4/endpoints/-/sd_config", scrape_targets, methods=["GET"]),
    Route("/v4/endpoints/{id}", show, methods=["GET"]),
    Route("/v4/endpoints/{id}", delete, methods=["DELETE"]),
]

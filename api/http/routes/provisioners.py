"""Provisioner routes: `PUT|GET|DELETE /v4/provisioners/{name}` and `GET /v4/provisioners`.

Cluster admins define and delete (domain.app.provisioners); every signed-in user reads them, as they read nodes,
and sees the nodes each one made or is making. Provider settings are shown to cluster admins only.
"""

from __future__ import annotations

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from api.http.answers import more as shapes
from api.http.routes import common as c
from domain.app.errors import NotFound
from domain.provisioner import Provisioner
from domain.provisioner import Request as NodeRequest
from domain.provisioner_spec import ProvisionerBody


async def put(request: Request) -> Response:
    name = request.path_params["name"]
    body = await c.body(request, ProvisionerBody)
    svc = c.services(request)
    existed = svc.views.provisioners.get(name) is not None
    found = await c.call(svc.roving.set_provisioner, name, body, c.principal(request), c.now())
    await c.settle(request)
    return c.json(answer(found, admin=True), status=200 if existed else 201)


async def get(request: Request) -> Response:
    return c.json(answer(_found(request), admin=c.principal(request).is_cluster_admin, history=True))


async def list_provisioners(request: Request) -> Response:
    admin = c.principal(request).is_cluster_admin
    rows = await c.call(c.services(request).views.provisioners.all, True)
    return c.json(shapes.Provisioners(provisioners=[answer(p, admin) for p in rows if not p.deleted or p.requests]))


async def delete(request: Request) -> Response:
    name = request.path_params["name"]
    found = await c.call(c.services(request).roving.delete_provisioner, name, c.principal(request), c.now())
    await c.settle(request)
    return c.json(shapes.ProvisionerDeleted(name=name, deleted=True, nodes_to_remove=sorted(found.requests)))


def _found(request: Request) -> Provisioner:
    found = c.services(request).views.provisioners.get(request.path_params["name"])
    if found is None or (found.deleted and not found.requests):
        raise NotFound(f"provisioner {request.path_params['name']}")
    return found


def answer(p: Provisioner, admin: bool, history: bool = False) -> shapes.Provisioner:
    """A provisioner as the API shows it: its definition (field names as PUT takes them) and its nodes."""
    spec = p.spec
    return shapes.Provisioner(
        name=p.name, provider=spec.provider, template=msgspec.to_builtins(spec.template),
        max_nodes=spec.max_nodes, idle_seconds=spec.idle_seconds, expected_boot_seconds=spec.expected_boot_seconds,
        boot_timeout_seconds=spec.boot_timeout_seconds, deleted=p.deleted, changed_by=p.changed_by,
        changed_at=p.changed_at, provision_seconds=p.expected_seconds() if p.latencies else None,
        nodes=[_request(r) for r in p.live()],
        settings=dict(spec.settings) if admin else None,
        history=[_request(r) for r in reversed(p.history)] if history else None,
    )


def _request(r: NodeRequest) -> shapes.ProvisionedNode:
    return shapes.ProvisionedNode(
        request=r.id, node=r.id, state=r.state.value, requested_at=r.requested_at, attempts=r.attempts,
        instance=r.instance, last_error=r.last_error, retry_at=r.retry_at, up_at=r.up_at, ended_at=r.ended_at,
        reason=r.end_reason, for_=r.reason)


routes = [
    Route("/v4/provisioners", list_provisioners, methods=["GET"]),
    Route("/v4/provisioners/{name}", put, methods=["PUT"]),
    Route("/v4/provisioners/{name}", get, methods=["GET"]),
    Route("/v4/provisioners/{name}", delete, methods=["DELETE"]),
]

"""`/v4/openapi.json`: generated from the route table, with msgspec schemas for the request bodies."""

from __future__ import annotations

import re
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from api.routes import agent, nodes, tenancy, workflows
from api.routes import common as c

PUBLIC = {"/healthz", "/readyz", "/metrics", "/v4/auth/login", "/v4/openapi.json"}
BODIES: dict[tuple[str, str], type] = {
    ("POST", "/v4/workflows"): workflows.Submit,
    ("POST", "/v4/nodes/{id}/cordon"): nodes.Reason,
    ("POST", "/v4/nodes/{id}/evict"): nodes.Reason,
    ("POST", "/v4/nodes/{id}/deprovision"): nodes.Deprovision,
    ("POST", "/v4/nodes/{id}/holds"): nodes.NewHold,
    ("POST", "/v4/organizations"): tenancy.Named,
    ("POST", "/v4/organizations/{id}/groups"): tenancy.Named,
    ("POST", "/v4/organizations/{id}/users"): tenancy.NewUser,
    ("PUT", "/v4/organizations/{id}/priority"): tenancy.Priority,
    ("PUT", "/v4/groups/{id}/priority"): tenancy.Priority,
    ("PUT", "/v4/users/{id}/priority"): tenancy.Priority,
    ("PUT", "/v4/groups/{id}/preempt"): tenancy.PreemptList,
    ("PUT", "/v4/groups/{id}/members/{user}"): tenancy.Membership,
    ("POST", "/v4/auth/login"): tenancy.Login,
    ("POST", "/v4/agent/register"): agent.Register,
    ("POST", "/v4/agent/heartbeat"): agent.Heartbeat,
    ("POST", "/v4/agent/reports"): agent.Report,
}
ERROR = {"type": "object", "properties": {"error": {"type": "string"}, "errors": {"type": "array", "items": {
    "type": "object", "properties": {"path": {"type": "string"}, "message": {"type": "string"}}}}}}


def operation(method: str, path: str, endpoint: Any, refs: dict[type, dict]) -> dict[str, Any]:
    params = [{"name": n, "in": "path", "required": True, "schema": {"type": "string"}}
              for n in re.findall(r"{(\w+)}", path)]
    op: dict[str, Any] = {
        "summary": (endpoint.__doc__ or endpoint.__name__.replace("_", " ")).splitlines()[0],
        "operationId": f"{method.lower()}_{re.sub(r'[^a-z0-9]+', '_', path.lower()).strip('_')}",
        "parameters": params,
        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {}}}},
                      "400": {"description": "Bad input", "content": {"application/json": {"schema": ERROR}}},
                      "404": {"description": "Not found", "content": {"application/json": {"schema": ERROR}}}},
    }
    if path not in PUBLIC:
        op["security"] = [{"bearer": []}]
        op["responses"]["401"] = {"description": "Missing, invalid or expired token"}
    body = BODIES.get((method, path))
    if body is not None:
        op["requestBody"] = {"required": True, "content": {"application/json": {"schema": refs[body]}}}
    return op


def document(routes: list[Any]) -> dict[str, Any]:
    """The OpenAPI 3.1 document of `routes`."""
    types = list(dict.fromkeys(BODIES.values()))
    refs, components = msgspec.json.schema_components(types, ref_template="#/components/schemas/{name}")
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        if not isinstance(route, Route):
            continue
        for method in sorted((route.methods or set()) - {"HEAD"}):
            paths.setdefault(route.path, {})[method.lower()] = operation(method, route.path, route.endpoint,
                                                                        dict(zip(types, refs)))
    return {"openapi": "3.1.0", "info": {"title": "Roving", "version": "4"}, "paths": paths,
            "components": {"schemas": components,
                           "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}}}


async def openapi(request: Request) -> Response:
    return c.json(document(request.app.routes))


routes = [Route("/v4/openapi.json", openapi, methods=["GET"])]

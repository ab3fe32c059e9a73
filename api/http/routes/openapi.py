"""`/v4/openapi.json`: generated from the route table, with msgspec schemas for the request bodies and for the
answers routes name with `@answers` (api.http.answers), stable operationIds and summaries (api.http.operations);
and `/v4/docs`, a "try it" page: Swagger UI from the swagger-ui-bundle-v2 package, served here, no CDN."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Route

from api.http.operations import operation_names
from api.http.routes import accounts, agent, audit, catalog, endpoints, nodes, projects, sessions, tenancy, workflows
from api.http.routes import common as c
from domain.app.errors import NotFound
from domain.provisioner_spec import ProvisionerBody

PUBLIC = {"/healthz", "/readyz", "/metrics", "/v4/auth/login", "/v4/auth/refresh", "/v4/openapi.json", "/v4/version",
          "/v4/docs"}
BODIES: dict[tuple[str, str], type] = {
    ("POST", "/v4/workflows"): workflows.Submit,
    ("POST", "/v4/workflows:validate"): workflows.Submit,
    ("POST", "/v4/nodes/{id}/cordon"): nodes.Reason,
    ("POST", "/v4/nodes/{id}/evict"): nodes.Reason,
    ("POST", "/v4/nodes/{id}/deprovision"): nodes.Deprovision,
    ("POST", "/v4/nodes/{id}/holds"): nodes.NewHold,
    ("DELETE", "/v4/nodes/{id}/credentials/{credential}"): nodes.Reason,
    ("POST", "/v4/organizations"): tenancy.Named,
    ("POST", "/v4/organizations/{id}/groups"): tenancy.Named,
    ("POST", "/v4/organizations/{id}/users"): tenancy.NewUser,
    ("PUT", "/v4/organizations/{id}/priority"): tenancy.Priority,
    ("PUT", "/v4/groups/{id}/priority"): tenancy.Priority,
    ("PUT", "/v4/users/{id}/priority"): tenancy.Priority,
    ("PUT", "/v4/groups/{id}/preempt"): tenancy.PreemptList,
    ("PUT", "/v4/groups/{id}/members/{user}"): tenancy.Membership,
    ("POST", "/v4/auth/login"): accounts.Login,
    ("POST", "/v4/auth/refresh"): sessions.RefreshRequest,
    ("POST", "/v4/agent/register"): agent.Register,
    ("POST", "/v4/agent/heartbeat"): agent.Heartbeat,
    ("POST", "/v4/agent/reports"): agent.Report,
    ("POST", "/v4/agent/reports:batch"): agent.Reports,
    ("POST", "/v4/audit/query"): audit.Query,
    ("POST", "/v4/endpoints"): endpoints.CreateEndpoint,
    ("PUT", "/v4/admin/centralconfig"): dict[str, Any],
    ("POST", "/v4/catalog/sources"): catalog.AddSource,
    ("POST", "/v4/catalog/templates/{name}:render"): catalog.Values,
    ("POST", "/v4/catalog/templates/{name}:start"): catalog.Values,
    ("PUT", "/v4/provisioners/{name}"): ProvisionerBody,
    ("PUT", "/v4/projects/{path}"): projects.ProjectBody,
    ("PATCH", "/v4/projects/{path}"): projects.ProjectChange,
    ("PUT", "/v4/groups/{id}/project"): projects.GroupProject,
}
STRING, BOOLEAN, INTEGER, NUMBER = {"type": "string"}, {"type": "boolean"}, {"type": "integer"}, {"type": "number"}
QUERIES: dict[tuple[str, str], dict[str, dict[str, Any]]] = {
    ("GET", "/v4/scheduler/queue"): {"mine": BOOLEAN, "all": BOOLEAN, "owner": STRING, "priority_min": NUMBER,
                                     "queue": STRING, "state": STRING,
                                     "limit": {"type": "integer", "minimum": 1, "maximum": 10_000}},
    ("GET", "/v4/workflows"): {"status": STRING, "order_by": STRING, "q": STRING, "owner": STRING, "next": STRING,
                               "since": {"type": "string", "format": "date-time"},
                               "until": {"type": "string", "format": "date-time"},
                               "limit": {"type": "integer", "minimum": 1, "maximum": 10_000}},
    ("POST", "/v4/workflows:validate"): {"cluster": STRING},
    ("GET", "/v4/catalog"): {"q": STRING, "category": STRING},
    ("GET", "/v4/catalog/templates/{name}"): {"source": STRING},
    ("GET", "/v4/workflows/{id}/events"): {"follow": BOOLEAN},
    ("GET", "/v4/workflows/{id}/why"): {"all": BOOLEAN},
    ("GET", "/v4/agent/assignments"): {"node_id": {"type": "string", "format": "uuid"}},
    ("GET", "/v4/audit"): {**dict.fromkeys(audit.FILTERS[:-1], STRING),
                           "limit": {"type": "integer", "minimum": 1, "maximum": audit.MAX_LIMIT}},
    ("GET", "/v4/federation/status"): {"cluster": STRING},
    ("GET", "/v4/federation/queue/stats"): {"cluster": STRING},
    ("GET", "/v4/federation/workflows"): {"cluster": STRING},
    ("GET", "/v4/federation/workflows/{id}"): {"cluster": STRING},
    ("GET", "/v4/federation/workflows/{id}/events"): {"cluster": STRING},
}
CREATED = {("POST", p) for p in ("/v4/workflows", "/v4/organizations", "/v4/organizations/{id}/users",
                                  "/v4/organizations/{id}/groups", "/v4/endpoints", "/v4/nodes/{id}/cordon",
                                  "/v4/nodes/{id}/holds", "/v4/catalog/sources",
                                  "/v4/catalog/templates/{name}:start")}
TEXT = {"schema": {"type": "string"}}
CONTENT: dict[tuple[str, str], dict[str, Any]] = {  # answers that are not JSON
    ("GET", "/metrics"): {"text/plain": TEXT},
    ("GET", "/v4/audit/export.parquet"): {audit.PARQUET: TEXT},
    ("GET", "/v4/workflows/{id}/log/{stage}"): {"text/plain": TEXT},
    ("GET", "/v4/workflows/{id}/events"): {"application/json": {"schema": {}}, "text/event-stream": TEXT},
}
PROXY = "/endpoints/"  # a bound service's own answers, whatever they are
CONVERTOR = re.compile(r"{(\w+):\w+}")  # Starlette's `{path:path}` is OpenAPI's `{path}`
ERROR = {"type": "object", "properties": {"error": {"type": "string"}, "errors": {"type": "array", "items": {
    "type": "object", "properties": {"path": {"type": "string"}, "message": {"type": "string"}}}}}}


def operation(method: str, path: str, endpoint: Any, refs: dict[Any, dict]) -> dict[str, Any]:
    params = [{"name": n, "in": "path", "required": True, "schema": {"type": "string"}}
              for n in re.findall(r"{(\w+)}", path)]
    params += [{"name": n, "in": "query", "required": False, "schema": schema}
               for n, schema in QUERIES.get((method, path), {}).items()]
    operation_id, summary = operation_names(method, path, endpoint.__name__)
    answer = getattr(endpoint, "answer", None)
    success = {"application/json": {"schema": refs[answer] if answer is not None else {}}}
    op: dict[str, Any] = {
        "summary": summary,
        "operationId": operation_id,
        "parameters": params,
        "responses": {"201" if (method, path) in CREATED else "200": {
                          "description": "Created" if (method, path) in CREATED else "OK",
                          "content": {**CONTENT.get((method, path), success),
                                      **(success if answer is not None else {})}},
                      "400": {"description": "Bad input", "content": {"application/json": {"schema": ERROR}}},
                      "404": {"description": "Not found", "content": {"application/json": {"schema": ERROR}}},
                      "503": {"description": "A part of the control plane this needs is not running or not configured",
                              "content": {"application/json": {"schema": ERROR}}}},
    }
    if path not in PUBLIC:
        op["security"] = [{"bearer": []}]
        op["responses"]["401"] = {"description": "Missing, invalid or expired token",
                                  "content": {"application/json": {"schema": ERROR}}}
        op["responses"]["403"] = {"description": "Not allowed to the caller",
                                  "content": {"application/json": {"schema": ERROR}}}
    if method != "GET":
        op["responses"]["409"] = {"description": "Conflicts with the current state",
                                  "content": {"application/json": {"schema": ERROR}}}
        op["responses"]["413"] = {"description": "The body is over ROVING_MAX_BODY_BYTES (api.http.limits)",
                                  "content": {"application/json": {"schema": ERROR}}}
    if path == "/v4/auth/login":
        op["responses"]["401"] = {"description": "Unknown username or wrong password",
                                  "content": {"application/json": {"schema": ERROR}}}
    if path == "/v4/auth/refresh":
        op["responses"]["401"] = {"description": "Refresh token expired, used up or reused, or the account disabled",
                                  "content": {"application/json": {"schema": ERROR}}}
    if path.startswith(PROXY):
        op["responses"]["200"]["content"] = {"*/*": {"schema": {}}}
        op["responses"]["default"] = {"description": "The service's own answer", "content": {"*/*": {"schema": {}}}}
    body = BODIES.get((method, path))
    if body is not None:
        op["requestBody"] = {"required": True, "content": {"application/json": {"schema": refs[body]}}}
    return op


def document(routes: list[Any]) -> dict[str, Any]:
    """The OpenAPI 3.1 document of `routes`."""
    answered = [getattr(r.endpoint, "answer", None) for r in routes if isinstance(r, Route)]
    types = list(dict.fromkeys([*BODIES.values(), *(t for t in answered if t is not None)]))
    refs, components = msgspec.json.schema_components(types, ref_template="#/components/schemas/{name}")
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        if not isinstance(route, Route):
            continue
        path = CONVERTOR.sub(r"{\1}", route.path)
        if path.startswith("/v4/docs"):
            continue  # the try-it page is for people, not an operation
        for method in sorted((route.methods or set()) - {"HEAD"}):
            paths.setdefault(path, {})[method.lower()] = operation(method, path, route.endpoint,
                                                                  dict(zip(types, refs, strict=True)))
    info = {"title": "Roving", "version": "4",
            "description": "Roving's HTTP API. Get a token with POST /v4/auth/login (or `roving context login`), then "
                           "send it as `Authorization: Bearer <token>`. Try it at /v4/docs."}
    return {"openapi": "3.1.0", "info": info, "paths": paths,
            "components": {"schemas": components,
                           "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}}}


async def openapi(request: Request) -> Response:
    return c.json(document(request.app.routes))


DOCS = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Roving API · try it</title>
<link rel="stylesheet" href="/v4/docs/static/swagger-ui.css"><link rel="icon" href="data:,"></head>
<body><div id="swagger-ui"></div>
<script src="/v4/docs/static/swagger-ui-bundle.js"></script>
<script src="/v4/docs/start.js"></script></body></html>
"""
START = """window.ui = SwaggerUIBundle({url: "/v4/openapi.json", dom_id: "#swagger-ui", deepLinking: true,
  tryItOutEnabled: true, persistAuthorization: false, displayOperationId: true});
"""


async def docs(request: Request) -> Response:
    """Swagger UI on this server's document: Authorize with a token from POST /v4/auth/login, then try it."""
    return Response(DOCS, media_type="text/html; charset=utf-8")


async def docs_start(request: Request) -> Response:
    return Response(START, media_type="text/javascript")  # a file, not inline: the CSP allows only 'self' scripts


SWAGGER_FILES = {"swagger-ui.css": "text/css", "swagger-ui-bundle.js": "text/javascript"}


async def docs_static(request: Request) -> Response:
    """The two Swagger UI files the page loads, from the installed swagger-ui-bundle-v2 package (Swagger UI 5)."""
    from swagger_ui_bundle import swagger_ui_path

    name = request.path_params["file"]
    if name not in SWAGGER_FILES:
        raise NotFound(f"docs file {name!r}")
    return FileResponse(Path(str(swagger_ui_path)) / name, media_type=SWAGGER_FILES[name],
                        headers={"Cache-Control": "public, max-age=86400"})


routes = [Route("/v4/openapi.json", openapi, methods=["GET"]), Route("/v4/docs", docs, methods=["GET"]),
          Route("/v4/docs/start.js", docs_start, methods=["GET"]),
          Route("/v4/docs/static/{file}", docs_static, methods=["GET"])]

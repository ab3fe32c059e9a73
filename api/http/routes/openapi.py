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

from api.http import answers as a
from api.http.operations import operation_names
from api.http.routes import (
    accounts,
    agent,
    audit,
    catalog,
    endpoints,
    log_follow,
    nodes,
    projects,
    resubmit,
    sessions,
    tenancy,
    workflows,
)
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
    ("POST", "/v4/workflows/{id}:resubmit"): resubmit.Resubmit,
    ("POST", "/v4/workflows/{id}:retry"): resubmit.Retry,
}
# The answers of routes that carry no `@answers` mark, by operation (the types are in api.http.answers.more).
ANSWERS: dict[tuple[str, str], Any] = {
    ("GET", "/v4/openapi.json"): dict[str, Any],
    ("GET", "/v4/workflows/{id}/allocations/{aid}/explain"): a.Explained,
    ("GET", "/v4/admin/centralconfig"): a.CentralConfig,
    ("PUT", "/v4/admin/centralconfig"): a.ConfigChanged,
    ("POST", "/v4/agent/heartbeat"): a.Ok,
    ("POST", "/v4/agent/reports"): a.Ok,
    ("GET", "/v4/audit"): a.AuditRows,
    ("POST", "/v4/audit/query"): a.AuditResult,
    ("POST", "/v4/secrets/-/rotate-key"): a.KeyRotated,
    ("GET", "/v4/profiles"): a.Profiles,
    ("PUT", "/v4/profiles/{name}"): a.Profile,
    ("GET", "/v4/profiles/{name}"): a.Profile,
    ("DELETE", "/v4/profiles/{name}"): a.ProfileDeleted,
    ("GET", "/v4/projects"): a.Projects,
    ("GET", "/v4/projects/{path}"): a.Project,
    ("PUT", "/v4/projects/{path}"): a.Project,
    ("PATCH", "/v4/projects/{path}"): a.Project,
    ("PUT", "/v4/groups/{id}/project"): a.GroupProjectSet,
    ("GET", "/v4/scheduler/shared-resources"): a.SharedResources,
    ("GET", "/v4/presets"): a.Presets,
    ("GET", "/v4/presets/{name}"): a.Preset,
    ("GET", "/v4/provisioners"): a.Provisioners,
    ("PUT", "/v4/provisioners/{name}"): a.Provisioner,
    ("GET", "/v4/provisioners/{name}"): a.Provisioner,
    ("DELETE", "/v4/provisioners/{name}"): a.ProvisionerDeleted,
    ("GET", "/v4/volume-provisioners"): a.VolumeProvisioners,
    ("PUT", "/v4/volume-provisioners/{name}"): a.VolumeProvisioner,
    ("GET", "/v4/volume-provisioners/{name}"): a.VolumeProvisioner,
    ("DELETE", "/v4/volume-provisioners/{name}"): a.VolumeProvisionerDeleted,
    ("GET", "/v4/catalog"): a.Catalog,
    ("GET", "/v4/catalog/sources"): a.CatalogSources,
    ("POST", "/v4/catalog/sources"): a.CatalogSource,
    ("DELETE", "/v4/catalog/sources/{id}"): a.CatalogSourceRemoved,
    ("POST", "/v4/catalog/templates/{name}:render"): a.Rendered,
    ("POST", "/v4/catalog/templates/{name}:start"): a.TemplateStarted,
    ("GET", "/v4/catalog/templates/{name}"): a.Template,
    ("GET", "/v4/federation/status"): a.FederationStatus,
    ("GET", "/v4/federation/queue/stats"): a.FederationStats,
    ("GET", "/v4/federation/workflows"): a.FederatedWorkflows,
    ("GET", "/v4/federation/workflows/{id}/events"): dict[str, Any],
    ("GET", "/v4/federation/workflows/{id}"): dict[str, Any],
    ("GET", "/v4/objects"): a.ObjectList,
    ("PUT", "/v4/objects/user/{name}"): a.ObjectPut,
    ("PUT", "/v4/objects/group/{group}/{name}"): a.ObjectPut,
    ("DELETE", "/v4/objects/user/{name}"): a.ObjectDeleted,
    ("DELETE", "/v4/objects/group/{group}/{name}"): a.ObjectDeleted,
    ("POST", "/v4/workflows/{id}/token:revoke"): a.TokenRevoked,
}
NO_CONTENT = {("DELETE", "/v4/projects/{path}")}
STRING, BOOLEAN, INTEGER, NUMBER = {"type": "string"}, {"type": "boolean"}, {"type": "integer"}, {"type": "number"}
LIMIT = {"type": "integer", "minimum": 1, "maximum": 10_000}  # projections.workflow_pages.MAX_LIMIT
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
    ("GET", "/v4/workflows/{id}/events"): {"follow": BOOLEAN, "since": INTEGER, "next": STRING, "limit": LIMIT},
    ("GET", "/v4/nodes"): {"q": STRING, "next": STRING, "limit": LIMIT},
    ("GET", "/v4/objects"): {"location": STRING, "q": STRING, "next": STRING, "page_token": STRING,
                             "limit": {"type": "integer", "minimum": 1, "maximum": 1_000},
                             "page_size": {"type": "integer", "minimum": 1, "maximum": 1_000}},
    ("GET", "/v4/workflows/{id}/log/{stage}"): {"follow": BOOLEAN},
    ("GET", "/v4/workflows/{id}/why"): {"all": BOOLEAN},
    ("GET", "/v4/agent/assignments"): {"node_id": {"type": "string", "format": "uuid"}},
    ("GET", "/v4/audit"): {**dict.fromkeys(audit.FILTERS[:-1], STRING),
                           "next": STRING, "limit": {"type": "integer", "minimum": 1, "maximum": audit.MAX_LIMIT},
                           "order": {"type": "string", "enum": ["oldest", "newest"]}},
    ("GET", "/v4/federation/status"): {"cluster": STRING},
    ("GET", "/v4/federation/queue/stats"): {"cluster": STRING},
    ("GET", "/v4/federation/workflows"): {"cluster": STRING},
    ("GET", "/v4/federation/workflows/{id}"): {"cluster": STRING},
    ("GET", "/v4/federation/workflows/{id}/events"): {"cluster": STRING},
}
CREATED = {("POST", p) for p in ("/v4/workflows", "/v4/organizations", "/v4/organizations/{id}/users",
                                  "/v4/organizations/{id}/groups", "/v4/endpoints", "/v4/nodes/{id}/cordon",
                                  "/v4/nodes/{id}/holds", "/v4/catalog/sources",
                                  "/v4/catalog/templates/{name}:start", "/v4/workflows/{id}:resubmit",
                                  "/v4/workflows/{id}:retry")}
TEXT = {"schema": {"type": "string"}}
BINARY = {"schema": {"type": "string", "format": "binary"}}
CONTENT: dict[tuple[str, str], dict[str, Any]] = {  # answers that are not JSON
    ("GET", "/metrics"): {"text/plain": TEXT},
    ("GET", "/v4/audit/export.parquet"): {audit.PARQUET: TEXT},
    ("GET", "/v4/workflows/{id}/log/{stage}"): {"text/plain": TEXT, log_follow.MEDIA_TYPE: BINARY},
    ("GET", "/v4/workflows/{id}/events"): {"text/event-stream": TEXT},
    ("POST", "/v4/catalog/sources/{id}:refresh"): {"application/x-ndjson": TEXT},
    ("GET", "/v4/objects/user/{name}"): {"application/octet-stream": BINARY},
    ("GET", "/v4/objects/group/{group}/{name}"): {"application/octet-stream": BINARY},
}
PROXY = "/endpoints/"  # a bound service's own answers, whatever they are
CONVERTOR = re.compile(r"{(\w+):\w+}")  # Starlette's `{path:path}` is OpenAPI's `{path}`
# Every refusal is one `Error` body (api.http.answers.base); the answers below $ref it, so a generated client has one
# error type, not one per operation and status.
REFUSALS = {
    "BadInput": "Bad input: `errors` names each field and the reason",
    "NotFound": "Not found",
    "Unavailable": "A part of the control plane this needs is not running or not configured",
    "Unauthorized": "Missing, invalid or expired token",
    "Forbidden": "Not allowed to the caller",
    "Conflict": "Conflicts with the current state",
    "TooLarge": "The body is over ROVING_MAX_BODY_BYTES (api.http.limits)",
    "LoginRefused": "Unknown username or wrong password",
    "RefreshRefused": "Refresh token expired, used up or reused, or the account disabled",
}
ERROR_REF = {"$ref": "#/components/schemas/Error"}
AREAS = {"organizations": "tenancy", "groups": "tenancy", "users": "tenancy", "healthz": "service",
         "readyz": "service", "metrics": "service", "version": "service", "openapi.json": "service",
         "scheduler": "queue", "presets": "profiles", "endpoints": "endpoints"}


def refusal(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/responses/{name}"}


def area(path: str) -> str:
    """The operation's tag: the API's area, from the path's first segment after /v4 (a few merged)."""
    segments = [s for s in path.removeprefix("/v4").split("/") if s]
    first = re.split(r"[:{]", segments[0])[0] if segments else "service"
    return AREAS.get(first, first)


def refusals(method: str, path: str) -> dict[str, Any]:
    found = {"400": refusal("BadInput"), "404": refusal("NotFound"), "503": refusal("Unavailable")}
    if path not in PUBLIC:
        found |= {"401": refusal("Unauthorized"), "403": refusal("Forbidden")}
    if method != "GET":
        found |= {"409": refusal("Conflict"), "413": refusal("TooLarge")}
    if path == "/v4/auth/login":
        found["401"] = refusal("LoginRefused")
    if path == "/v4/auth/refresh":
        found["401"] = refusal("RefreshRefused")
    return found


def success(method: str, path: str, answer: Any, refs: dict[Any, dict]) -> dict[str, Any]:
    if (method, path) in NO_CONTENT:
        return {"204": {"description": "Done"}}
    if path.startswith(PROXY):
        return {"200": {"description": "The service's answer", "content": {"*/*": BINARY}}}
    typed = {"application/json": {"schema": refs[answer]}} if answer is not None else {}
    content = {**CONTENT.get((method, path), {}), **typed}
    created = (method, path) in CREATED
    return {"201" if created else "200": {"description": "Created" if created else "OK", "content": content}}


def operation(method: str, path: str, endpoint: Any, refs: dict[Any, dict]) -> dict[str, Any]:
    params = [{"name": n, "in": "path", "required": True, "schema": {"type": "string"}}
              for n in re.findall(r"{(\w+)}", path)]
    params += [{"name": n, "in": "query", "required": False, "schema": schema}
               for n, schema in QUERIES.get((method, path), {}).items()]
    operation_id, summary = operation_names(method, path, endpoint.__name__)
    answer = getattr(endpoint, "answer", None) or ANSWERS.get((method, path))
    op: dict[str, Any] = {"summary": summary, "operationId": operation_id, "tags": [area(path)], "parameters": params,
                          "responses": {**success(method, path, answer, refs), **refusals(method, path)}}
    if path not in PUBLIC:
        op["security"] = [{"bearer": []}]
    if path.startswith(PROXY):
        op["responses"]["default"] = {"description": "The service's own answer", "content": {"*/*": BINARY}}
    body = BODIES.get((method, path))
    if body is not None:
        op["requestBody"] = {"required": True, "content": {"application/json": {"schema": refs[body]}}}
    return op


def plain_names(types: list[Any], refs: list[dict], components: dict[str, Any]) -> tuple[list[dict], dict[str, Any]]:
    """msgspec names a schema by module and class when two classes share a name (a request body and an answer both
    called `Membership`): the answer keeps the plain name, the body takes `...Body`; no name carries a dot."""
    renamed: dict[str, str] = {}
    for kind, ref in zip(types, refs, strict=True):
        name = ref.get("$ref", "").rsplit("/", 1)[-1]
        if "." in name:
            plain = name.rsplit(".", 1)[1]
            renamed[name] = plain + "Body" if kind in BODIES.values() else plain
    text = msgspec.json.encode([refs, components]).decode()
    for old, new in renamed.items():
        text = text.replace(f'"#/components/schemas/{old}"', f'"#/components/schemas/{new}"')
    new_refs, new_components = msgspec.json.decode(text)
    for old, new in renamed.items():  # generators name a model by its title, which msgspec sets to the class name
        new_components[old]["title"] = new
    return new_refs, {renamed.get(name, name): schema for name, schema in new_components.items()}


def any_items(node: Any) -> Any:
    """`items: {}` on every array that names none (msgspec's list[Any]): generators refuse an array without items."""
    if isinstance(node, list):
        return [any_items(n) for n in node]
    if not isinstance(node, dict):
        return node
    found = {k: any_items(v) for k, v in node.items()}
    if found.get("type") == "array" and "items" not in found:
        found["items"] = {}
    return found


def document(routes: list[Any]) -> dict[str, Any]:
    """The OpenAPI 3.1 document of `routes`."""
    answered = [getattr(r.endpoint, "answer", None) for r in routes if isinstance(r, Route)]
    types = list(dict.fromkeys([*BODIES.values(), *(t for t in answered if t is not None), *ANSWERS.values(),
                                a.Error]))
    generated, named = msgspec.json.schema_components(types, ref_template="#/components/schemas/{name}")
    refs, components = plain_names(types, list(generated), named)
    by_type = dict(zip(types, refs, strict=True))
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        if not isinstance(route, Route):
            continue
        path = CONVERTOR.sub(r"{\1}", route.path)
        if path.startswith("/v4/docs"):
            continue  # the try-it page is for people, not an operation
        for method in sorted((route.methods or set()) - {"HEAD"}):
            paths.setdefault(path, {})[method.lower()] = operation(method, path, route.endpoint, by_type)
    info = {"title": "Roving", "version": "4",
            "description": "Roving's HTTP API. Get a token with POST /v4/auth/login (or `roving context login`), then "
                           "send it as `Authorization: Bearer <token>`. Try it at /v4/docs."}
    responses = {name: {"description": text, "content": {"application/json": {"schema": ERROR_REF}}}
                 for name, text in REFUSALS.items()}
    return {"openapi": "3.1.0", "info": info, "paths": paths,
            "components": {"schemas": any_items(components), "responses": responses,
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

"""/v4/openapi.json is typed for its clients: answers have schemas from the msgspec types the routes encode
(api.http.answers; test_openapi_fuzz checks real answers against them), each operation has a written summary and a
stable operationId; /v4/version answers; /v4/docs is a try-it page served from a package, with no CDN."""

from __future__ import annotations

import re
from importlib import metadata

import msgspec
import pytest

from api.http.operations import OPERATIONS
from domain.tenancy import Role, Source
from tests.unit.api.harness import JOB, Api, token

TYPED = {("post", "/v4/workflows"): "WorkflowCreated", ("post", "/v4/workflows:validate"): "Validation",
         ("get", "/v4/workflows"): "WorkflowList", ("get", "/v4/workflows/{id}"): "WorkflowDetail",
         ("get", "/v4/nodes"): "NodeList", ("get", "/v4/version"): "Version", ("post", "/v4/auth/login"): "TokenPair",
         ("get", "/v4/auth/whoami"): "Whoami", ("get", "/readyz"): "Readiness"}


@pytest.fixture(scope="module")
def api():
    return Api()


@pytest.fixture(scope="module")
def document(api):
    return api.request("GET", "/v4/openapi.json").json()


def operations(document):
    return [(method, path, op) for path, methods in document["paths"].items() for method, op in methods.items()]


def test_the_main_answers_have_schemas_from_their_types(document):
    for (method, path), name in TYPED.items():
        op = document["paths"][path][method]
        success = op["responses"].get("201") or op["responses"]["200"]
        assert success["content"]["application/json"]["schema"] == {"$ref": f"#/components/schemas/{name}"}, path
    stage = document["components"]["schemas"]["Stage"]["properties"]
    assert {"started_at", "ended_at", "attempts"} <= set(stage)


def test_every_operation_has_a_written_summary_and_a_unique_camel_case_operation_id(document):
    ids = [op["operationId"] for _, _, op in operations(document)]
    assert len(ids) == len(set(ids))
    assert [i for i in ids if not re.fullmatch(r"[a-z][A-Za-z0-9]+", i)] == []
    assert [(m, p) for m, p, op in operations(document) if "_" in op["summary"] or " " not in op["summary"]] == []
    assert document["paths"]["/v4/workflows"]["get"]["operationId"] == "listWorkflows"
    assert document["paths"]["/v4/workflows/{id}"]["get"]["operationId"] == "getWorkflow"


def test_the_operation_table_names_only_routes_the_app_serves(document):
    served = {(m.upper(), p) for m, p, _ in operations(document)}
    assert sorted(set(OPERATIONS) - served) == []


def test_version_answers_without_a_token(api):
    answer = api.request("GET", "/v4/version")
    assert answer.status_code == 200
    assert answer.json()["version"] == metadata.version("roving") and answer.json()["api"] == "v4"


def test_the_try_it_page_loads_swagger_ui_from_this_server_not_a_cdn(api):
    page = api.request("GET", "/v4/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    sources = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert sources and all(s.startswith("/v4/") or s.startswith("data:") for s in sources)
    bundle = api.request("GET", "/v4/docs/static/swagger-ui-bundle.js")
    assert bundle.status_code == 200 and "SwaggerUIBundle" in bundle.text[:2000] + bundle.text[-2000:]
    assert "openapi.json" in api.request("GET", "/v4/docs/start.js").text
    assert api.request("GET", "/v4/docs/static/..%2Fsecret").status_code == 404


def test_a_described_workflow_encodes_its_answer_type(api):
    created = api.request("POST", "/v4/workflows", api.admin, json={"name": "typed", "definition": JOB})
    assert created.status_code == 201 and set(created.json()) == {"id", "warnings"}
    [stage] = api.request("GET", f"/v4/workflows/{created.json()['id']}", api.admin).json()["stages"]
    assert stage["started_at"] is None and stage["ended_at"] is None


def declared(api, method: str, path: str):
    """The answer type a route names with @answers, as the OpenAPI document reads it."""
    for route in api.app.routes:
        if getattr(route, "path", None) == path and method in (getattr(route, "methods", None) or ()):
            return route.endpoint.answer
    raise AssertionError(f"no route {method} {path}")


def test_real_answers_decode_as_the_types_their_routes_declare(api):
    agent = token("agent", Role.USER, source=Source.AGENT)
    body = {"name": "n1", "cpu": 2, "memory": 2**30, "devices": {"nvidia.com/gpu": 1}, "annotations": {},
            "definition": "local", "address": "127.0.0.1", "metrics_port": 9100}
    assert api.request("POST", "/v4/agent/register", agent, json=body).status_code == 200
    workflow = api.request("POST", "/v4/workflows", api.admin, json={"name": "w", "definition": JOB}).json()["id"]
    calls = [("GET", "/v4/nodes", "/v4/nodes"), ("GET", "/v4/nodes/{id}", "/v4/nodes/n1"),
             ("GET", "/v4/nodes/{id}/events", "/v4/nodes/n1/events"),
             ("GET", "/v4/nodes/{id}/credentials", "/v4/nodes/n1/credentials"),
             ("GET", "/v4/nodes/-/sd_config", "/v4/nodes/-/sd_config"),
             ("POST", "/v4/nodes/{id}/cordon", "/v4/nodes/n1/cordon"),
             ("GET", "/v4/nodes/{id}/holds", "/v4/nodes/n1/holds"),
             ("POST", "/v4/nodes/{id}/uncordon", "/v4/nodes/n1/uncordon"),
             ("GET", "/v4/workflows", "/v4/workflows"), ("GET", "/v4/workflows/{id}", f"/v4/workflows/{workflow}"),
             ("GET", "/v4/workflows/{id}/events", f"/v4/workflows/{workflow}/events"),
             ("GET", "/v4/workflows/{id}/why", f"/v4/workflows/{workflow}/why?all=true"),
             ("GET", "/v4/scheduler/queue", "/v4/scheduler/queue"), ("GET", "/v4/scheduler/stats", "/v4/scheduler/stats"),
             ("GET", "/v4/auth/whoami", "/v4/auth/whoami"), ("GET", "/v4/endpoints", "/v4/endpoints"),
             ("POST", "/v4/workflows/{id}:stop", f"/v4/workflows/{workflow}:stop")]
    org, _ = api.organization_with_user("typed-org", "typed-user")
    group = api.request("POST", f"/v4/organizations/{org}/groups", api.admin, json={"name": "g"}).json()["id"]
    user = api.request("GET", f"/v4/organizations/{org}/users", api.admin).json()["users"][0]["id"]
    calls += [("GET", "/v4/organizations", "/v4/organizations"), ("GET", "/v4/organizations/{id}", f"/v4/organizations/{org}"),
              ("GET", "/v4/organizations/{id}/users", f"/v4/organizations/{org}/users"),
              ("GET", "/v4/organizations/{id}/groups", f"/v4/organizations/{org}/groups"),
              ("GET", "/v4/groups/{id}", f"/v4/groups/{group}"), ("GET", "/v4/users/{id}", f"/v4/users/{user}")]
    bodies = {"/v4/groups/{id}/members/{user}": {"role": "member"}, "/v4/groups/{id}/priority": {"priority": -1}}
    calls += [("PUT", "/v4/groups/{id}/members/{user}", f"/v4/groups/{group}/members/{user}"),
              ("PUT", "/v4/groups/{id}/priority", f"/v4/groups/{group}/priority"),
              ("DELETE", "/v4/groups/{id}/members/{user}", f"/v4/groups/{group}/members/{user}"),
              ("POST", "/v4/secrets", "/v4/secrets"), ("GET", "/v4/secrets", "/v4/secrets")]
    bodies["/v4/secrets"] = {"name": "typed", "value": "never shown"}
    for method, route, url in calls:
        sent = bodies.get(route, {"reason": "typed"}) if method in ("POST", "PUT") else None
        answer = api.request(method, url, api.admin, json=sent)
        assert answer.status_code in (200, 201), (url, answer.text)
        msgspec.convert(answer.json(), declared(api, method, route), strict=False)  # raises naming the field

"""/v4/openapi.json is typed for its clients: answers have schemas from the msgspec types the routes encode
(api.http.answers; test_openapi_fuzz checks real answers against them), each operation has a written summary and a
stable operationId; /v4/version answers; /v4/docs is a try-it page served from a package, with no CDN."""

from __future__ import annotations

import re
from importlib import metadata

import pytest

from api.http.operations import OPERATIONS
from tests.unit.api.harness import JOB, Api

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

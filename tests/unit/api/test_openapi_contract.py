"""/v4/openapi.json is a document a client is generated from: every answer with a body has a schema, every refusal
is the one `Error` schema, statuses are enums, timestamps are date-times, operations carry their area's tag, and no
schema name carries a module path (a generator then makes one class per answer, not one per module)."""

from __future__ import annotations

import pytest

from tests.unit.api.harness import Api


@pytest.fixture(scope="module")
def document():
    return Api().request("GET", "/v4/openapi.json").json()


def operations(document):
    return [(method, path, op) for path, methods in document["paths"].items() for method, op in methods.items()]


def resolved(document, answer):
    ref = answer.get("$ref")
    return document["components"]["responses"][ref.rsplit("/", 1)[1]] if ref else answer


def test_every_operation_that_answers_2xx_with_a_body_has_a_schema(document):
    untyped = [(method, path, status, kind) for method, path, op in operations(document)
               for status, answer in op["responses"].items() if status.startswith("2")
               for kind, content in resolved(document, answer).get("content", {}).items() if not content.get("schema")]
    assert untyped == []


def test_no_schema_name_carries_a_module_path(document):
    assert [name for name in document["components"]["schemas"] if "." in name] == []
    assert {"Membership", "MembershipBody", "PreemptList", "PreemptListBody"} <= set(document["components"]["schemas"])


def test_every_refusal_refers_to_the_one_error_schema(document):
    schemas = {str(resolved(document, answer)["content"]["application/json"]["schema"])
               for _, _, op in operations(document) for status, answer in op["responses"].items()
               if status[0] in "45"}
    assert schemas == {str({"$ref": "#/components/schemas/Error"})}
    assert document["components"]["schemas"]["Error"]["properties"]["errors"]["items"] == {
        "$ref": "#/components/schemas/Problem"}


def test_statuses_are_enums_and_times_are_date_times(document):
    schemas = document["components"]["schemas"]
    assert schemas["WorkflowSummary"]["properties"]["status"] == {"$ref": "#/components/schemas/WorkflowStatus"}
    assert set(schemas["WorkflowStatus"]["enum"]) == {"PENDING", "STARTED", "FINISHED", "FAILED", "CANCELED"}
    assert schemas["Stage"]["properties"]["status"] == {"$ref": "#/components/schemas/StageStatus"}
    assert "RUNNING" in schemas["StageStatus"]["enum"]
    assert set(schemas["NodeStatus"]["enum"]) == {"READY", "NOT_READY", "OFFLINE"}
    assert schemas["WorkflowSummary"]["properties"]["submitted_at"]["format"] == "date-time"
    assert schemas["CatalogSource"]["properties"]["added_at"]["format"] == "date-time"


def test_every_operation_is_tagged_with_its_area(document):
    assert [(m, p) for m, p, op in operations(document) if len(op.get("tags", [])) != 1] == []
    tags = {p: op["tags"][0] for m, p, op in operations(document) if m == "get"}
    assert tags["/v4/workflows/{id}"] == "workflows" and tags["/v4/organizations/{id}/users"] == "tenancy"
    assert tags["/v4/catalog/templates/{name}"] == "catalog" and tags["/healthz"] == "service"


def arrays_without_items(node, path="") -> list[str]:
    if isinstance(node, list):
        return [p for i, n in enumerate(node) for p in arrays_without_items(n, f"{path}[{i}]")]
    if not isinstance(node, dict):
        return []
    own = [path] if node.get("type") == "array" and "items" not in node else []
    return own + [p for k, v in node.items() for p in arrays_without_items(v, f"{path}.{k}")]


def test_generators_get_a_model_name_and_item_type_they_accept(document):
    """openapi-python-client names a model by its title (two `Membership` titles made it drop five group
    operations' answers) and refuses an array without `items` (it dropped GET /v4/presets' and the audit query's)."""
    schemas = document["components"]["schemas"]
    titles = [schema.get("title", name) for name, schema in schemas.items()]
    assert sorted({t for t in titles if titles.count(t) > 1}) == []
    assert schemas["MembershipBody"]["title"] == "MembershipBody" and schemas["Membership"]["title"] == "Membership"
    assert arrays_without_items(schemas) == []

"""Free-text and map fields are bounded before they reach the log: past a bound, a 400 naming the field (issue 39,
item 8). Each would otherwise be stored in an event that must fit one JetStream message, or carried by every later
scheduler pass."""

from __future__ import annotations

import pytest

from api.http.fields import MAX_ANNOTATION_VALUE, MAX_ANNOTATIONS, MAX_REASON
from tests.unit.api.harness import JOB, Api
from tests.unit.api.test_node_and_agent_routes import AGENT, REGISTER


@pytest.fixture(scope="module")
def api():
    built = Api()
    assert built.request("POST", "/v4/agent/register", AGENT, json=REGISTER).status_code == 200
    return built


@pytest.fixture(scope="module")
def alice(api):
    return api.organization_with_user("acme", "alice")[1]


def refused(answer, field: str) -> str:
    assert answer.status_code == 400, answer.text
    assert answer.json()["errors"][0]["path"] == field
    return answer.json()["error"]


def test_a_workflow_with_2_mb_of_annotations_is_a_400_naming_the_field_not_a_500(api, alice):
    big = {"definition": JOB, "annotations": {"notes": "x" * 2_300_000}}
    assert f"length <= {MAX_ANNOTATION_VALUE}" in refused(api.request("POST", "/v4/workflows", alice, json=big),
                                                          "annotations[...]")  # msgspec's name for a value
    many = {"definition": JOB, "annotations": {f"k{n}": "v" for n in range(MAX_ANNOTATIONS + 1)}}
    assert refused(api.request("POST", "/v4/workflows", alice, json=many), "annotations")
    fits = {"definition": JOB, "annotations": {"preset": "gpu-small", "digest": "sha256:" + "0" * 64}}
    assert api.request("POST", "/v4/workflows", alice, json=fits).status_code == 201


def test_a_1_mb_cordon_reason_is_refused_and_a_reasonable_one_is_kept(api):
    message = refused(api.request("POST", "/v4/nodes/n1/cordon", api.admin, json={"reason": "r" * 2**20}), "reason")
    assert f"length <= {MAX_REASON}" in message
    assert api.request("GET", "/v4/nodes/n1/holds", api.admin).json()["holds"] == []
    placed = api.request("POST", "/v4/nodes/n1/cordon", api.admin, json={"reason": "bios update"})
    assert placed.status_code == 201


@pytest.mark.parametrize("path, body", [
    ("/v4/nodes/n1/holds", {"effect": "cordon", "reason": "r" * (MAX_REASON + 1)}),
    ("/v4/nodes/n1/evict", {"reason": "r" * (MAX_REASON + 1)}),
])
def test_every_hold_reason_is_bounded(api, path, body):
    refused(api.request("POST", path, api.admin, json=body), "reason")


def test_a_catalog_source_field_past_its_bound_is_refused(api):
    body = {"name": "big", "location": "https://example.org/" + "a" * 10_000, "scope": "cluster"}
    refused(api.request("POST", "/v4/catalog/sources", api.admin, json=body), "location")


def test_a_users_email_and_password_are_bounded_when_an_admin_creates_them(api):
    org = api.request("POST", "/v4/organizations", api.admin, json={"name": "bounds"}).json()["id"]
    body = {"username": "zed", "email": "z" * 1_200_000 + "@example.org", "password": "Correct-Horse-9-battery"}
    refused(api.request("POST", f"/v4/organizations/{org}/users", api.admin, json=body), "email")
    body = {"username": "zed", "email": "zed@example.org", "password": "Correct-Horse-9-" + "b" * 1_200_000}
    refused(api.request("POST", f"/v4/organizations/{org}/users", api.admin, json=body), "password")


@pytest.mark.parametrize("values", [{f"v{n}": 1 for n in range(2_000)}, {"n" * 1_000: 1}, {"text": "x" * 300_000}])
def test_catalog_values_past_their_bounds_are_a_400_naming_values(api, alice, values):
    for action in ("render", "start"):
        answer = api.request("POST", f"/v4/catalog/templates/any:{action}", alice, json={"values": values})
        assert answer.status_code == 400, answer.text
        [error] = answer.json()["errors"]
        assert error["path"] == "values" or "`$.values`" in error["message"]  # a name too long: msgspec's words

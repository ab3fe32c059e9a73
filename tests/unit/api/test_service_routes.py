"""Health, readiness, metrics, the OpenAPI document, tenancy listings and the central configuration."""

import pytest

from tests.unit.api.harness import Api


@pytest.fixture(scope="module")
def api():
    return Api()


def test_health_needs_no_token_and_ready_follows_the_tailer(api):
    assert api.request("GET", "/healthz").status_code == 200
    assert api.request("GET", "/readyz").status_code == 200
    api.services.tailer.caught_up = False
    try:
        assert api.request("GET", "/readyz").status_code == 503
    finally:
        api.services.tailer.caught_up = True


def test_metrics_count_requests_by_route_template(api):
    api.request("GET", "/v4/workflows/abc", api.admin)
    text = api.request("GET", "/metrics").text
    assert 'route="/v4/workflows/{id}"' in text and "roving_http_requests_total" in text


def test_the_openapi_document_lists_the_routes_with_body_schemas(api):
    document = api.request("GET", "/v4/openapi.json").json()
    assert document["openapi"].startswith("3.")
    assert "post" in document["paths"]["/v4/workflows"]
    assert "requestBody" in document["paths"]["/v4/auth/login"]["post"]
    assert "Submit" in document["components"]["schemas"]


def test_a_tenant_sees_only_its_own_organization(api):
    acme, alice = api.organization_with_user("acme", "alice")
    globex, _ = api.organization_with_user("globex", "bob")
    assert [o["id"] for o in api.request("GET", "/v4/organizations", alice).json()["organizations"]] == [acme]
    assert api.request("GET", f"/v4/organizations/{globex}", alice).status_code == 404
    assert api.request("GET", f"/v4/organizations/{globex}/users", alice).status_code == 404
    users = api.request("GET", f"/v4/organizations/{acme}/users", alice).json()["users"]
    assert [u["username"] for u in users] == ["alice"] and "password" not in str(users)


def test_a_weak_password_is_refused_naming_the_field(api):
    org = api.request("POST", "/v4/organizations", api.admin, json={"name": "initech"}).json()["id"]
    body = {"username": "peter", "email": "p@initech.org", "password": "short", "role": "user"}
    answer = api.request("POST", f"/v4/organizations/{org}/users", api.admin, json=body)
    assert answer.status_code == 400 and answer.json()["errors"][0]["path"] == "password"


def test_org_priority_is_for_cluster_admins(api):
    org, alice = api.organization_with_user("umbrella", "carol")
    assert api.request("PUT", f"/v4/organizations/{org}/priority", alice, json={"priority": 5}).status_code in (403, 400)
    assert api.request("PUT", f"/v4/organizations/{org}/priority", api.admin, json={"priority": 5}).status_code == 200


def test_central_config_is_for_cluster_admins(api):
    _, dave = api.organization_with_user("hooli", "dave")
    assert api.request("GET", "/v4/admin/centralconfig", dave).status_code == 403
    assert api.request("PUT", "/v4/admin/centralconfig", dave, json={}).status_code == 403
    assert api.request("GET", "/v4/admin/centralconfig", api.admin).json()["revision"] == 0

"""Bad input and bad tokens get 4xx answers that say what is wrong, never a traceback."""

from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from api.http.errors import decode_error_path
from domain.tenancy import Role
from tests.unit.api.harness import Api, token, webhook_token


@pytest.fixture(scope="module")
def api():
    return Api()


def test_msgspec_errors_name_the_field():
    class Body(msgspec.Struct):
        priority: int
    with pytest.raises(msgspec.ValidationError) as error:
        msgspec.json.decode(b'{"priority": "high"}', type=Body)
    assert decode_error_path(error.value) == ("priority", "Expected `int`, got `str`")


def test_a_request_without_a_token_is_refused_with_the_reason(api):
    answer = api.request("GET", "/v4/workflows")
    assert answer.status_code == 401
    assert "missing bearer token" in answer.json()["error"]
    assert answer.headers["www-authenticate"] == "Bearer"


def test_an_expired_token_is_refused_as_expired(api):
    old = token("admin", Role.CLUSTER_ADMIN, now=datetime.now(UTC) - timedelta(hours=2))
    answer = api.request("GET", "/v4/nodes", old)
    assert answer.status_code == 401 and "expired" in answer.json()["error"]


def test_a_tampered_token_is_refused(api):
    answer = api.request("GET", "/v4/nodes", api.admin[:-3] + "AAA")
    assert answer.status_code == 401 and "bad signature" in answer.json()["error"]


def test_the_webhook_token_works_only_on_the_webhook_paths(api):
    assert api.request("GET", "/v4/nodes", webhook_token()).status_code == 401
    assert api.request("POST", "/v4/alerts", webhook_token(), content=b'{"alerts": []}').status_code != 401


def test_a_wrong_password_gets_401_and_no_token(api):
    answer = api.request("POST", "/v4/auth/login", json={"username": "admin", "password": "nope"})
    assert answer.status_code == 401 and "token" not in answer.json()


def test_a_malformed_json_body_is_a_400(api):
    answer = api.request("POST", "/v4/organizations", api.admin, content=b"{not json")
    assert answer.status_code == 400 and answer.json()["errors"][0]["message"]


def test_a_missing_field_is_named(api):
    answer = api.request("POST", "/v4/organizations", api.admin, json={})
    assert answer.status_code == 400
    assert "name" in answer.json()["errors"][0]["message"]


def test_every_answer_says_nosniff_and_https_adds_hsts(api):
    plain = api.request("GET", "/healthz")
    assert plain.headers["x-content-type-options"] == "nosniff"
    assert "strict-transport-security" not in plain.headers
    assert "strict-transport-security" in api.request("GET", "https://roving.test/healthz").headers

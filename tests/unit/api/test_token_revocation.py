"""Revocation by token id: logout and an admin's revoke are events, and every request checks them."""

import base64

import msgspec
import pytest

from domain.tenancy import Role, Source
from tests.unit.api.harness import Api, token


@pytest.fixture
def api():
    return Api()


def jti_of(token_text: str) -> str:
    part = token_text.split(".")[1]
    return msgspec.json.decode(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))["jti"]


def test_a_logged_out_token_is_refused_and_a_fresh_login_works(api):
    _, bob = api.organization_with_user("acme", "bob")
    assert api.request("POST", "/v4/auth/logout", bob).status_code == 200
    refused = api.request("GET", "/v4/auth/whoami", bob)
    assert refused.status_code == 401 and "revoked" in refused.json()["error"]
    _, again = api.organization_with_user("acme2", "carol")
    assert api.request("GET", "/v4/auth/whoami", again).status_code == 200


def test_an_admin_revokes_an_agent_token_by_its_id_and_the_log_records_it(api):
    agent = token("agent", Role.USER, source=Source.AGENT)
    assert api.request("GET", "/v4/auth/whoami", agent).status_code == 200
    answer = api.request("POST", "/v4/auth/revoke", api.admin, json={"jti": jti_of(agent), "reason": "node stolen"})
    assert answer.status_code == 201, answer.text
    assert api.request("GET", "/v4/auth/whoami", agent).status_code == 401
    again = api.request("POST", "/v4/auth/revoke", api.admin, json={"jti": jti_of(agent), "reason": "node stolen"})
    assert again.json()["already"] is True
    topics = [r.topic for r in api.services.roving.recorder.select_notifications(start=1, limit=10_000)]
    assert sum(t.endswith("RevokedToken.Revoked") for t in topics) == 1


def test_a_user_may_not_revoke_someone_elses_token(api):
    _, bob = api.organization_with_user("acme", "bob")
    answer = api.request("POST", "/v4/auth/revoke", bob, json={"jti": jti_of(api.admin), "reason": "mischief"})
    assert answer.status_code == 403
    assert api.request("GET", "/v4/auth/whoami", api.admin).status_code == 200


def test_a_revocation_without_a_reason_names_the_field(api):
    answer = api.request("POST", "/v4/auth/revoke", api.admin, json={"jti": "x", "reason": " "})
    assert answer.status_code == 400 and answer.json()["errors"][0]["path"] == "reason"

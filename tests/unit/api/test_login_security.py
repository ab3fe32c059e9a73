"""Tokens speak only for accounts that exist and are active, with their current role; passwords change and unlock."""

from datetime import UTC, datetime, timedelta

import pytest

from adapters.auth.tokens import Identity, issue
from domain.app.ids import user_id
from domain.tenancy import Role, Source
from tests.unit.api.harness import KEY, PASSWORD, Api, token


@pytest.fixture
def api():
    return Api()


def test_a_token_signed_for_an_unknown_user_is_refused(api):
    answer = api.request("GET", "/v4/auth/whoami", token("ghost", Role.CLUSTER_ADMIN))
    assert answer.status_code == 401
    assert "unknown account" in answer.json()["error"]


def test_a_token_without_an_account_cannot_speak_as_an_admin(api):
    forged = issue(Identity(user_id=None, username="root", role=Role.CLUSTER_ADMIN, organization_id=None),
                   KEY, timedelta(hours=1), datetime.now(UTC))
    assert api.request("GET", "/v4/organizations", forged).status_code == 401


def test_a_token_acts_with_the_accounts_current_role_not_the_one_it_claims(api):
    org_id, _ = api.organization_with_user("acme", "bob")
    claims_admin = token("bob", Role.CLUSTER_ADMIN)
    assert api.request("GET", "/v4/auth/whoami", claims_admin).json()["role"] == "user"
    assert api.request("POST", "/v4/organizations", claims_admin, json={"name": "evil"}).status_code == 403


def test_a_disabled_accounts_token_is_refused(api):
    _, bob = api.organization_with_user("acme", "bob")
    account = api.services.roving.repository.get(user_id("bob"))
    account.disable("left", by="admin", at=datetime.now(UTC))
    api.services.roving.save(account)
    api.services.tailer.wait_for(api.services.roving.last_position)
    assert api.request("GET", "/v4/auth/whoami", bob).status_code == 401


def test_login_answers_the_same_for_an_unknown_user_and_a_wrong_password(api):
    api.organization_with_user("acme", "bob")
    known = api.request("POST", "/v4/auth/login", json={"username": "bob", "password": "Wrong-Kettle-42-Moon"})
    unknown = api.request("POST", "/v4/auth/login", json={"username": "nobody", "password": "Wrong-Kettle-42-Moon"})
    assert known.status_code == unknown.status_code == 401
    assert known.json() == unknown.json()


def test_a_user_changes_their_password_and_logs_in_with_the_new_one(api):
    _, bob = api.organization_with_user("acme", "bob")
    weak = api.request("POST", "/v4/users/me/password", bob,
                       json={"current_password": PASSWORD, "new_password": "Fuzzball-2026-Rocks"})
    assert weak.status_code == 400 and "new_password" in weak.text and "Fuzzball" not in weak.text
    changed = api.request("POST", "/v4/users/me/password", bob,
                          json={"current_password": PASSWORD, "new_password": "Green-Teapot-77-Sun"})
    assert changed.status_code == 200, changed.text
    login = api.request("POST", "/v4/auth/login", json={"username": "bob", "password": "Green-Teapot-77-Sun"})
    assert login.status_code == 200


def test_an_admin_unlocks_a_locked_account(api):
    api.organization_with_user("acme", "bob")
    for _ in range(5):
        api.request("POST", "/v4/auth/login", json={"username": "bob", "password": "Wrong-Kettle-42-Moon"})
    locked = api.request("POST", "/v4/auth/login", json={"username": "bob", "password": PASSWORD})
    assert locked.status_code == 401 and "locked until" in locked.json()["error"]
    assert api.request("POST", f"/v4/users/{user_id('bob')}/unlock", api.admin).status_code == 200
    assert api.request("POST", "/v4/auth/login", json={"username": "bob", "password": PASSWORD}).status_code == 200


def test_an_agent_token_still_works_without_an_account(api):
    agent = token("agent", Role.USER, source=Source.AGENT)
    assert api.request("GET", "/v4/auth/whoami", agent).status_code == 200

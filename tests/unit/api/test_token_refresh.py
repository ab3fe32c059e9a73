"""A person's short access token is renewed with a refresh token good for one exchange; a reused one ends the login."""

import json
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from api.cli.client import Client, context_renewer, load_contexts, save_contexts
from api.cli.main import build_parser, execute
from domain.app.ids import user_id
from tests.unit.api.harness import PASSWORD, Api, token


@pytest.fixture
def api():
    api = Api({"ROVING_TOKEN_TTL": "10m", "ROVING_REFRESH_TTL": "2d"})
    api.organization_with_user("acme", "bob")
    return api


def login(api):
    answer = api.request("POST", "/v4/auth/login", json={"username": "bob", "password": PASSWORD})
    assert answer.status_code == 200, answer.text
    return answer.json()


def refresh(api, refresh_token):
    return api.request("POST", "/v4/auth/refresh", json={"refresh_token": refresh_token})


def test_login_answers_a_short_access_token_and_a_refresh_token(api):
    pair = login(api)
    assert (pair["expires_in"], pair["refresh_expires_in"]) == (600, 2 * 86400)
    assert api.request("GET", "/v4/auth/whoami", pair["token"]).json()["username"] == "bob"


def test_a_refresh_answers_a_working_pair_and_uses_the_old_refresh_token_up(api):
    pair = login(api)
    renewed = refresh(api, pair["refresh_token"])
    assert renewed.status_code == 200, renewed.text
    fresh = renewed.json()
    assert fresh["refresh_token"] != pair["refresh_token"] and fresh["expires_in"] == 600
    assert api.request("GET", "/v4/auth/whoami", fresh["token"]).json()["username"] == "bob"
    assert refresh(api, fresh["refresh_token"]).status_code == 200  # the rotated one works once in turn


def test_reusing_a_spent_refresh_token_revokes_the_whole_login(api):
    pair = login(api)
    fresh = refresh(api, pair["refresh_token"]).json()
    reused = refresh(api, pair["refresh_token"])
    assert reused.status_code == 401 and "reused" in reused.json()["error"]
    assert refresh(api, fresh["refresh_token"]).status_code == 401  # the thief's (or owner's) newer one too
    assert api.request("GET", "/v4/auth/whoami", fresh["token"]).status_code == 401
    assert api.request("GET", "/v4/auth/whoami", login(api)["token"]).status_code == 200  # a new login is fine


def test_a_refresh_token_is_no_access_token_and_the_other_way_round(api):
    pair = login(api)
    as_access = api.request("GET", "/v4/auth/whoami", pair["refresh_token"])
    assert as_access.status_code == 401 and "wrong kind" in as_access.json()["error"]
    as_refresh = refresh(api, pair["token"])
    assert as_refresh.status_code == 401 and "wrong kind" in as_refresh.json()["error"]
    assert refresh(api, "rv1.garbage").status_code == 401


def test_a_disabled_account_cannot_refresh(api):
    pair = login(api)
    account = api.services.roving.repository.get(user_id("bob"))
    account.disable("left", by="admin", at=datetime.now(UTC))
    api.services.roving.save(account)
    api.services.tailer.wait_for(api.services.roving.last_position)
    refused = refresh(api, pair["refresh_token"])
    assert refused.status_code == 401 and "disabled" in refused.json()["error"]


def test_logout_ends_the_refresh_token_too(api):
    pair = login(api)
    assert api.request("POST", "/v4/auth/logout", pair["token"]).status_code == 200
    assert refresh(api, pair["refresh_token"]).status_code == 401


def test_a_refresh_without_its_field_names_it(api):
    answer = api.request("POST", "/v4/auth/refresh", json={})
    assert answer.status_code == 400 and "refresh_token" in answer.text


def forwarding_transport(api):
    """Requests go to the in-process API with the Authorization header the CLI sent."""
    def handle(request: httpx.Request) -> httpx.Response:
        headers = {"Content-Type": "application/json"}
        if "authorization" in request.headers:
            headers["Authorization"] = request.headers["authorization"]
        answer = api.request(request.method, str(request.url), content=request.content, headers=headers)
        return httpx.Response(answer.status_code, headers=answer.headers, content=answer.content)
    return httpx.MockTransport(handle)


def test_the_cli_refreshes_once_its_access_token_expired_and_saves_the_new_pair(api, tmp_path, capsys):
    pair, path = login(api), tmp_path / "config.yaml"
    expired = token("bob", ttl=timedelta(minutes=10), now=datetime.now(UTC) - timedelta(hours=1))
    save_contexts({"current": "lab", "contexts": {"lab": {"api": "http://roving.test", "token": expired,
                                                          "refresh_token": pair["refresh_token"]}}}, path)
    transport = forwarding_transport(api)
    client = Client("http://roving.test", expired, transport=transport,
                    renew=context_renewer("http://roving.test", path, transport))
    assert execute(build_parser().parse_args(["user", "whoami", "-o", "json"]), client) == 0
    out = "".join(line for line in capsys.readouterr().out.splitlines(True) if " request " not in line)
    assert json.loads(out)["username"] == "bob"
    saved = load_contexts(path)["contexts"]["lab"]
    assert saved["token"] != expired and saved["refresh_token"] != pair["refresh_token"]
    assert api.request("GET", "/v4/auth/whoami", saved["token"]).status_code == 200


def test_the_cli_says_to_log_in_again_when_the_refresh_token_is_spent(api, tmp_path, capsys):
    pair, path = login(api), tmp_path / "config.yaml"
    assert refresh(api, pair["refresh_token"]).status_code == 200
    expired = token("bob", ttl=timedelta(minutes=10), now=datetime.now(UTC) - timedelta(hours=1))
    save_contexts({"current": "lab", "contexts": {"lab": {"api": "http://roving.test", "token": expired,
                                                          "refresh_token": pair["refresh_token"]}}}, path)
    transport = forwarding_transport(api)
    client = Client("http://roving.test", expired, transport=transport,
                    renew=context_renewer("http://roving.test", path, transport))
    assert execute(build_parser().parse_args(["user", "whoami"]), client) == 1
    assert "log in again" in capsys.readouterr().err

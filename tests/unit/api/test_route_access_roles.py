"""Who may call each route: every route the app serves has one row; without a token it is 401; roles get their due."""

from collections import Counter

import pytest
from starlette.routing import WebSocketRoute

from api.composition.settings import load_settings
from api.http.app import create_app
from tests.unit.api.harness import services
from tests.unit.api.route_access_table import PUBLIC, ROUTES, Row
from tests.unit.api.route_access_world import ADMIN, OWNER, USER, WEBHOOK, Call, opened


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    yield from opened(tmp_path_factory)


def served() -> Counter:
    """(method, path) of every HTTP route the app serves; HEAD follows GET; a mount counts as ANY. The endpoint
    proxy's WebSocket routes keep the HTTP proxy's rule, checked over real sockets in test_proxy_websockets.py."""
    app = create_app(load_settings({}), services())
    return Counter((method, route.path) for route in app.routes if not isinstance(route, WebSocketRoute)
                   for method in getattr(route, "methods", None) or {"ANY"} if method != "HEAD")


def tabled() -> Counter:
    return Counter((method, row.path) for row in ROUTES for method in row.methods.split())


def each_method(rows: list[Row]) -> list:
    return [pytest.param(method, row, id=f"{method} {row.path}") for row in rows for method in row.methods.split()]


def each_caller(rows: list[Row]) -> list:
    """The user, the owner and the admin on every row, and whoever else the row lets in (agent, webhook)."""
    return [pytest.param(method, row, caller, id=f"{method} {row.path} as {caller}")
            for row in rows for method in row.methods.split()
            for caller in [USER, OWNER, ADMIN, *sorted(row.who - {USER, OWNER, ADMIN})]]


PRIVATE = [row for row in ROUTES if row.who != PUBLIC]


def test_every_route_the_app_serves_has_exactly_one_access_row():
    routes, rows = served(), tabled()
    assert sorted(set(routes) - set(rows)) == [], "routes without a row: decide who may call them"
    assert sorted(set(rows) - set(routes)) == [], "rows for routes the app does not serve"
    assert sorted(pair for pair, count in rows.items() if count > 1) == [], "routes with more than one row"
    assert sorted(pair for pair, count in routes.items() if count > 1) == [], "a route the app shadows"


@pytest.mark.parametrize("method, row", each_method([row for row in ROUTES if row.who == PUBLIC]))
def test_a_public_route_answers_without_a_token(world, method, row):
    answer = world.send(method, row.own_call(world), None)
    assert answer.status_code == 200, answer.text


@pytest.mark.parametrize("method, row", each_method(PRIVATE))
def test_without_a_token_a_route_answers_401(world, method, row):
    answer = world.send(method, row.own_call(world), None)
    assert answer.status_code == 401, answer.text
    assert answer.headers["WWW-Authenticate"] == "Bearer"


def test_a_public_endpoint_is_proxied_without_a_token(world):
    answer = world.send("GET", Call(f"/endpoints/{world.b.public.name}/"), None)
    assert answer.status_code == 503, answer.text  # not 401: it waits for a service, not for a token


@pytest.mark.parametrize("method, row", each_method(PRIVATE))
def test_the_webhook_token_opens_only_the_alert_and_service_discovery_routes(world, method, row):
    answer = world.send(method, row.own_call(world), WEBHOOK)
    if WEBHOOK in row.who:
        assert answer.status_code in row.ok, answer.text
    else:
        assert answer.status_code == 401 and "token refused" in answer.json()["error"], answer.text


@pytest.mark.parametrize("method, row, caller", each_caller(PRIVATE))
def test_each_caller_gets_what_the_route_allows_them(world, method, row, caller):
    answer = world.send(method, row.own_call(world), caller)
    if caller in row.who:
        assert answer.status_code in row.ok, answer.text
    else:
        assert answer.status_code in (403, 404), answer.text
        assert set(answer.json()) == {"error", "errors"}, "a refusal carries nothing but the reason"


@pytest.mark.parametrize("path", ["/v4/workflows/{t.workflow}/why",
                                  "/v4/workflows/{t.workflow}/allocations/{t.allocation}/explain"])
@pytest.mark.parametrize("person, status", [("alice", 200), ("dave", 200), ("admin", 200), ("carol", 403),
                                            ("olga", 403), ("erin", 404), ("bob", 404)])
def test_explaining_someone_elses_allocation_needs_explain_allocation_on_its_group(world, path, person, status):
    """Alice's work in group lab: dave holds explain_allocation on lab, carol is only a member, olga owns the
    organization, erin is outside the group and bob outside the organization."""
    world.no_explain(world.a.group, "carol")
    answer = world.send("GET", Call(path.format(t=world.a)), person)
    assert answer.status_code == status, answer.text
    if status == 200:
        assert world.a.allocation in answer.text
    else:
        assert world.a.allocation not in answer.text


def test_a_group_owner_manages_members_and_stops_their_work_while_a_groupmate_only_sees_it(world):
    a = world.a
    lab2 = world.as_admin("POST", f"/v4/organizations/{a.org}/groups", {"name": "lab2"})["id"]
    wrong = world.send("PUT", Call(f"/v4/groups/{lab2}/members/{a.users['erin']}", {"role": "owner"}), ADMIN)
    assert wrong.json()["errors"] == [{"path": "role", "message": "a group role is member or group_owner, got 'owner'"}]
    world.as_admin("PUT", f"/v4/groups/{lab2}/members/{a.users['erin']}", {"role": "group_owner"})
    added = world.send("PUT", Call(f"/v4/groups/{lab2}/members/{a.users['frank']}", {"role": "member"}), "erin")
    assert added.status_code == 200, added.text
    world.settle()
    franks = world.submit("frank")
    assert world.send("POST", Call(f"/v4/workflows/{franks}:stop"), "erin").status_code == 200
    alices = world.submit("alice")
    assert world.send("GET", Call(f"/v4/workflows/{alices}"), "carol").status_code == 200
    refused = world.send("POST", Call(f"/v4/workflows/{alices}:stop"), "carol")
    assert refused.status_code == 403 and "may stop_workflow" in refused.json()["error"], refused.text


def test_an_organization_owner_grants_and_revokes_explain_allocation_and_a_group_owner_may_not(world):
    a, why = world.a, Call(f"/v4/workflows/{world.a.workflow}/why")
    world.no_explain(a.group, "carol")
    grant = Call(f"/v4/groups/{a.group}/explainers/{a.users['carol']}")
    lab3 = world.as_admin("POST", f"/v4/organizations/{a.org}/groups", {"name": "lab3"})["id"]
    world.as_admin("PUT", f"/v4/groups/{lab3}/members/{a.users['erin']}", {"role": "group_owner"})
    refused = world.send("PUT", Call(f"/v4/groups/{lab3}/explainers/{a.users['frank']}"), "erin")
    assert refused.status_code == 403 and "grant_explain" in refused.json()["error"], refused.text
    assert world.send("GET", why, "carol").status_code == 403
    assert world.send("PUT", grant, "olga").json()["explain_allocation"] is True
    assert a.allocation in world.send("GET", why, "carol").text
    assert world.send("DELETE", grant, "olga").status_code == 200
    assert world.send("GET", why, "carol").status_code == 403
    again = world.send("DELETE", grant, "olga")
    assert again.status_code == 400 and again.json()["errors"][0]["path"] == "explain_allocation", again.text
    outsider = world.send("PUT", Call(f"/v4/groups/{a.group}/explainers/{world.b.member}"), "olga")
    assert outsider.status_code == 404, outsider.text


def test_an_explainer_outside_the_group_reads_why_and_explain_but_not_the_workflow(world):
    """An explain_allocation grant alone (erin is in the organization, not in lab) opens why and explain; the
    workflow's detail, events and logs stay closed to her."""
    world.grant_explain(world.a.group, "erin")
    world.settle()
    for path in ("/v4/workflows/{t.workflow}/why", "/v4/workflows/{t.workflow}/allocations/{t.allocation}/explain"):
        answer = world.send("GET", Call(path.format(t=world.a)), "erin")
        assert answer.status_code == 200, (path, answer.text)
    assert world.send("GET", Call(f"/v4/workflows/{world.a.workflow}"), "erin").status_code in (403, 404)

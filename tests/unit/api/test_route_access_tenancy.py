"""Organization A's people naming organization B's ids get 404, and no list or filter shows them B's things."""

import tempfile
from pathlib import Path
from uuid import uuid4

import duckdb
import msgspec
import pytest

from tests.unit.api.route_access_table import ROUTES
from tests.unit.api.route_access_world import ADMIN, OWNER, USER, Call, opened


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    yield from opened(tmp_path_factory)


def readable(answer) -> str:
    """The answer as text; a Parquet export as the text of its rows."""
    if not answer.headers.get("content-type", "").startswith("application/vnd.apache.parquet"):
        return answer.text
    with tempfile.TemporaryDirectory() as scratch, duckdb.connect() as db:
        path = Path(scratch) / "audit.parquet"
        path.write_bytes(answer.content)
        return str(db.execute("SELECT * FROM read_parquet(?)", [str(path)]).fetchall())


def unasked(world, answer, call: Call) -> list[str]:
    """What of organization B's the answer shows that the request did not name itself."""
    asked, text = call.path + msgspec.json.encode(call.json).decode(), readable(answer)
    return sorted(name for name, value in world.b_things().items() if value in text and value not in asked)


FOREIGN = [pytest.param(method, row, caller, id=f"{method} {row.path} as {caller}")
           for row in ROUTES if callable(row.foreign) for method in row.methods.split() for caller in (USER, OWNER)]


def test_every_route_that_takes_an_id_says_whose_ids_they_are():
    assert [row.path for row in ROUTES if "{" in row.path and row.foreign is None] == []


@pytest.mark.parametrize("method, row, caller", FOREIGN)
def test_naming_another_organizations_ids_is_404(world, method, row, caller):
    call = row.foreign(world)
    answer = world.send(method, call, caller)
    assert answer.status_code == 404, answer.text
    assert set(answer.json()) == {"error", "errors"} and unasked(world, answer, call) == []


def mixed(label: str, caller: str, build, thing: str, expected: set[int]) -> object:
    return pytest.param(caller, label.split()[0], build, thing, expected, id=f"{label} as {caller}")


MIXED = [  # organization A's own thing with one of B's ids beside it
    mixed("PUT /v4/groups/{A's}/members/{B's}", OWNER,
          lambda w, x: Call(f"/v4/groups/{w.a.group}/members/{x}", {}), "bob", {404}),
    mixed("DELETE /v4/groups/{A's}/members/{B's}", OWNER,
          lambda w, x: Call(f"/v4/groups/{w.a.group}/members/{x}"), "bob", {404}),
    mixed("GET /v4/workflows/{A's}/allocations/{B's}/explain", USER,
          lambda w, x: Call(f"/v4/workflows/{w.a.workflow}/allocations/{x}/explain"), "allocation", {404}),
    mixed("PUT /v4/groups/{A's}/preempt [B's]", OWNER,
          lambda w, x: Call(f"/v4/groups/{w.a.group}/preempt", {"groups": [x]}), "group", {400, 404}),
    mixed("POST /v4/endpoints owned by B's group", USER, lambda w, x: Call("/v4/endpoints", {
        "name": w.fresh("ep"), "scope": "group", "owner_kind": "group", "owner_id": x}), "group", {403, 404}),
    mixed("POST /v4/endpoints owned by B's user", USER, lambda w, x: Call("/v4/endpoints", {
        "name": w.fresh("ep"), "owner_kind": "user", "owner_id": x}), "bob", {404}),
]


@pytest.mark.parametrize("caller, method, build, thing, expected", MIXED)
def test_one_of_another_organizations_ids_beside_your_own_answers_as_an_unknown_id(world, caller, method, build, thing,
                                                                                   expected):
    theirs, nobodys = world.b_things()[thing], str(uuid4())
    answer, unknown = (world.send(method, build(world, x), caller) for x in (theirs, nobodys))
    assert answer.status_code in expected, answer.text
    assert answer.status_code == unknown.status_code
    assert answer.text.replace(theirs, "ID") == unknown.text.replace(nobodys, "ID")


LISTS = [("GET", path, None) for path in [
    "/v4/workflows", "/v4/workflows?status=PENDING", "/v4/workflows?status=pending&order_by=priority",
    "/v4/workflows?order_by=name", "/v4/workflows?order_by=-submitted", "/v4/scheduler/queue",
    "/v4/scheduler/queue?mine=false", "/v4/scheduler/queue?mine=false&owner={bob}", "/v4/scheduler/queue?owner={group}",
    "/v4/scheduler/queue?all=true&mine=0", "/v4/scheduler/queue?state=READY&priority_min=-1e9", "/v4/audit",
    "/v4/audit?workflow={workflow}", "/v4/audit?organization={org}", "/v4/audit?principal=bob&limit=10000",
    "/v4/audit/export.parquet", "/v4/audit/export.parquet?workflow={workflow}", "/v4/endpoints", "/v4/organizations",
]] + [("POST", "/v4/audit/query", {"sql": sql}) for sql in [
    "SELECT * FROM audit", "SELECT * FROM audit WHERE organization = '{org}'",
    "SELECT DISTINCT organization, workflow, principal, payload FROM audit",
]]


def listing(world, path: str, body: dict | None) -> Call:
    """The list request naming B's ids where the template asks for them."""
    fill = world.b_things()
    return Call(path.format(**fill), {"sql": body["sql"].format(**fill)} if body else None)


LIST_CASES = [pytest.param(caller, method, path, body, id=f"{method} {path} {body or ''} as {caller}")
              for method, path, body in LISTS for caller in (USER, OWNER)]


@pytest.mark.parametrize("caller, method, path, body", LIST_CASES)
def test_a_list_shows_organization_a_nothing_of_organization_b(world, caller, method, path, body):
    call = listing(world, path, body)
    answer = world.send(method, call, caller)
    assert answer.status_code in (200, 403), answer.text  # 403: the audit log is for owners and admins
    assert unasked(world, answer, call) == []


def test_the_endpoint_list_shows_no_organization_wide_endpoint_of_another_organization(world):
    listed = {e["id"] for e in world.send("GET", Call("/v4/endpoints"), USER).json()["endpoints"]}
    assert world.a.endpoint.id in listed and world.b.endpoint.id not in listed


@pytest.mark.parametrize("method, path, body", LISTS, ids=[f"{m} {p} {b or ''}" for m, p, b in LISTS])
def test_the_cluster_admin_sees_organization_b_in_the_same_lists(world, method, path, body):
    call = listing(world, path, body)
    assert unasked(world, world.send(method, call, ADMIN), call) != []


@pytest.mark.parametrize("caller, person", [(USER, "alice"), (OWNER, "olga")])
@pytest.mark.parametrize("query", ["", "?mine=false", "?mine=false&owner={bob}", "?mine=false&owner={group}",
                                   "?all=true&mine=0", "?mine=no&state=READY"], ids=lambda query: query or "no query")
def test_the_queue_of_anyone_but_an_admin_holds_only_their_own_rows(world, caller, person, query):
    answer = world.send("GET", Call("/v4/scheduler/queue" + query.format(**world.b_things())), caller).json()
    assert answer["mine"] is True
    assert {row["user_id"] for row in answer["queue"]} == (set() if "owner" in query else {world.a.users[person]})

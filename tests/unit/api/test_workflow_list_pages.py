"""`GET /v4/workflows` pages: at most `limit` rows and a `next` cursor while more remain, newest first, with
filters by status, owner, submission time and part of the name; a bad limit or cursor is a 400 naming it."""

from datetime import UTC, datetime, timedelta

import pytest

from tests.unit.api.harness import JOB, PASSWORD, Api


@pytest.fixture(scope="module")
def api():
    return Api()


@pytest.fixture(scope="module")
def acme(api):
    return api.organization_with_user("acme", "alice")


@pytest.fixture(scope="module")
def alice(acme):
    return acme[1]


@pytest.fixture(scope="module")
def carol(api, acme):
    return member(api, acme[0], "carol", "org_owner")


@pytest.fixture(scope="module")
def submitted(api, alice, carol):
    """Seven workflows of alice's, in submission order, and one of carol's (submitted last)."""
    ids = [api.request("POST", "/v4/workflows", alice, json={"name": f"train-{n}", "definition": JOB}).json()["id"]
           for n in range(7)]
    theirs = api.request("POST", "/v4/workflows", carol, json={"name": "carols-sweep", "definition": JOB}).json()["id"]
    return ids, theirs


def every_page(api, token, query):
    """Follow `next` to the end: the rows in the order received, and how many pages it took."""
    rows, pages, after = [], 0, None
    while True:
        answer = api.request("GET", f"/v4/workflows?{query}" + (f"&next={after}" if after else ""), token)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert len(body["workflows"]) <= 3
        rows, pages, after = rows + body["workflows"], pages + 1, body["next"]
        if after is None:
            return rows, pages


def test_a_limit_answers_at_most_that_many_rows_and_a_cursor_while_more_remain(api, alice, submitted):
    ids, _ = submitted
    first = api.request("GET", "/v4/workflows?limit=3", alice).json()
    assert len(first["workflows"]) == 3 and first["next"]
    rows, pages = every_page(api, alice, "limit=3")
    assert [r["id"] for r in rows] == list(reversed(ids)) and pages == 3  # newest first, each once


def test_the_last_page_has_no_cursor(api, alice, submitted):
    answer = api.request("GET", "/v4/workflows?limit=50", alice).json()
    assert len(answer["workflows"]) == 7 and answer["next"] is None


def test_a_workflow_submitted_while_paging_neither_shifts_nor_repeats_the_rest(api, alice, submitted):
    ids, _ = submitted
    first = api.request("GET", "/v4/workflows?limit=3&q=train", alice).json()
    late = api.request("POST", "/v4/workflows", alice, json={"name": "late", "definition": JOB}).json()["id"]
    rest = api.request("GET", f"/v4/workflows?limit=10&q=train&next={first['next']}", alice).json()
    assert [r["id"] for r in first["workflows"] + rest["workflows"]] == list(reversed(ids))
    api.request("PATCH", f"/v4/workflows/{late}:stop", alice)


def test_q_finds_workflows_by_part_of_their_name(api, alice, submitted):
    rows = api.request("GET", "/v4/workflows?q=TRAIN-3", alice).json()["workflows"]
    assert [r["name"] for r in rows] == ["train-3"]


def test_owner_takes_a_users_name_and_pages_through_only_their_work(api, carol, submitted):
    ids, theirs = submitted
    everyone, _ = every_page(api, carol, "limit=3&q=a")
    assert theirs in [r["id"] for r in everyone] and set(ids) <= {r["id"] for r in everyone}
    rows, _ = every_page(api, carol, "limit=3&owner=carol")
    assert [r["id"] for r in rows] == [theirs]
    mine, _ = every_page(api, carol, "limit=3&owner=alice&q=train")
    assert [r["id"] for r in mine] == list(reversed(ids))


def test_since_and_until_bound_the_submission_time(api, alice, submitted):
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    assert api.request("GET", f"/v4/workflows?since={later.replace('+', '%2B')}", alice).json()["workflows"] == []
    before = api.request("GET", "/v4/workflows?until=2000-01-01", alice).json()["workflows"]
    assert before == []
    rows, _ = every_page(api, alice, "limit=3&since=2000-01-01&q=train")
    assert len(rows) == 7


def test_status_and_the_older_order_by_still_filter_and_sort_each_page(api, alice, submitted):
    ids, _ = submitted
    rows, _ = every_page(api, alice, "limit=3&status=pending&order_by=submitted&q=train")
    assert [r["id"] for r in rows] == ids
    names, _ = every_page(api, alice, "limit=3&order_by=name&q=train")
    assert [r["name"] for r in names] == sorted(f"train-{n}" for n in range(7))


@pytest.mark.parametrize("query, field", [
    ("limit=0", "limit"), ("limit=10001", "limit"), ("limit=many", "limit"), ("next=not-a-cursor", "next"),
    ("since=yesterday", "since"), ("until=31/01/2026", "until"), ("q=" + "x" * 300, "q")])
def test_a_bad_limit_cursor_time_or_search_is_a_400_naming_it(api, alice, query, field):
    answer = api.request("GET", f"/v4/workflows?{query}", alice)
    assert answer.status_code == 400, answer.text
    assert answer.json()["errors"][0]["path"] == field


def test_a_cursor_of_another_order_is_a_400_naming_next(api, alice, submitted):
    after = api.request("GET", "/v4/workflows?limit=1", alice).json()["next"]
    answer = api.request("GET", f"/v4/workflows?limit=1&order_by=name&next={after}", alice)
    assert answer.status_code == 400 and answer.json()["errors"][0]["path"] == "next"


def member(api, org_id, username, role):
    """Another user of an existing organization; returns their token."""
    body = {"username": username, "email": f"{username}@example.org", "password": PASSWORD, "role": role}
    assert api.request("POST", f"/v4/organizations/{org_id}/users", api.admin, json=body).status_code == 201
    return api.request("POST", "/v4/auth/login", json={"username": username, "password": PASSWORD}).json()["token"]

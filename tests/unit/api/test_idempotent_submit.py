"""`Idempotency-Key` on POST /v4/workflows: a retried submit returns the first answer, never a second workflow."""

import pytest

from tests.unit.api.harness import JOB, Api


@pytest.fixture(scope="module")
def api():
    return Api()


@pytest.fixture(scope="module")
def alice(api):
    return api.organization_with_user("acme", "alice")[1]


@pytest.fixture(scope="module")
def bob(api):
    return api.organization_with_user("globex", "bob")[1]


def submit(api, who, key, definition=JOB, name="hello"):
    return api.request("POST", "/v4/workflows", who, json={"name": name, "definition": definition},
                       headers={"Idempotency-Key": key})


def listed(api, who) -> list[str]:
    return [w["id"] for w in api.request("GET", "/v4/workflows", who).json()["workflows"]]


def test_the_same_key_twice_returns_the_first_workflow_and_creates_no_second(api, alice):
    first, again = submit(api, alice, "nightly-42"), submit(api, alice, "nightly-42")
    assert first.status_code == 201 and again.status_code == 201, again.text
    assert again.json()["id"] == first.json()["id"]
    assert listed(api, alice).count(first.json()["id"]) == 1


def test_another_key_or_no_key_is_another_workflow(api, alice):
    a, b = submit(api, alice, "run-a"), submit(api, alice, "run-b")
    plain = api.request("POST", "/v4/workflows", alice, json={"definition": JOB})
    assert len({a.json()["id"], b.json()["id"], plain.json()["id"]}) == 3


def test_the_same_key_from_another_user_is_their_own_workflow(api, alice, bob):
    assert submit(api, alice, "shared-key").json()["id"] != submit(api, bob, "shared-key").json()["id"]


def test_a_key_reused_for_a_different_definition_is_a_409_that_says_so(api, alice):
    submit(api, alice, "reused")
    other = submit(api, alice, "reused", definition=JOB.replace("hello", "other"))
    assert other.status_code == 409
    assert "Idempotency-Key was already used for a different submission" in other.json()["error"]


def test_an_empty_or_overlong_key_is_a_400_naming_the_header(api, alice):
    for key in ("", "k" * 256):
        answer = submit(api, alice, key)
        assert answer.status_code == 400 and answer.json()["errors"][0]["path"] == "Idempotency-Key"

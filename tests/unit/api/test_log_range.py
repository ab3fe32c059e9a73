"""A stage's log read by byte offset: the bytes asked for exactly as written, the log's total, and bad ranges
named."""

from __future__ import annotations

import pytest

from tests.unit.api.harness import JOB, Api

LOG = "h\u00e9llo, world\n".encode()  # a two-byte character: offsets are bytes, never characters


@pytest.fixture(scope="module")
def api():
    return Api()


@pytest.fixture(scope="module")
def alice(api):
    return api.organization_with_user("acme", "alice")[1]


@pytest.fixture(scope="module")
def workflow(api, alice):
    wid = api.request("POST", "/v4/workflows", alice, json={"name": "hello", "definition": JOB}).json()["id"]
    api.services.logs.lines[(wid, "hello")] = LOG
    return wid


def test_a_window_of_the_log_comes_back_byte_exact_with_the_total_and_where_it_starts(api, alice, workflow):
    answer = api.request("GET", f"/v4/workflows/{workflow}/log/hello?offset=2&limit=5", alice)
    assert answer.status_code == 200 and answer.content == LOG[2:7]
    assert answer.headers["Roving-Log-Total"] == str(len(LOG)) and answer.headers["Roving-Log-Offset"] == "2"


def test_a_reader_that_has_everything_gets_nothing_and_the_total(api, alice, workflow):
    answer = api.request("GET", f"/v4/workflows/{workflow}/log/hello?offset={len(LOG)}", alice)
    assert answer.status_code == 200 and answer.content == b"" and answer.headers["Roving-Log-Total"] == str(len(LOG))


def test_the_whole_log_keeps_its_text_body_and_names_its_total(api, alice, workflow):
    answer = api.request("GET", f"/v4/workflows/{workflow}/log/hello", alice)
    assert answer.text == LOG.decode() and answer.headers["Roving-Log-Total"] == str(len(LOG))


def test_a_negative_offset_reads_the_last_part_and_says_where_it_starts(api, alice, workflow):
    answer = api.request("GET", f"/v4/workflows/{workflow}/log/hello?offset=-6&limit=3", alice)
    assert answer.content == LOG[-6:-3] and answer.headers["Roving-Log-Offset"] == str(len(LOG) - 6)
    longer = api.request("GET", f"/v4/workflows/{workflow}/log/hello?offset=-1000", alice)
    assert longer.content == LOG and longer.headers["Roving-Log-Offset"] == "0"


@pytest.mark.parametrize(("query", "field"), [("offset=x", "offset"), ("limit=x", "limit"), ("limit=-5", "limit")])
def test_a_bad_range_is_refused_naming_the_parameter(api, alice, workflow, query, field):
    answer = api.request("GET", f"/v4/workflows/{workflow}/log/hello?{query}", alice)
    assert answer.status_code == 400 and field in answer.text

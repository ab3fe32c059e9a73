"""The cold index pages in exactly the order and by exactly the cursor the hot rows do, for every order a list
takes, so a page that mixes hot and cold rows neither skips nor repeats one."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from uuid import UUID

import pytest

from adapters.cold_index import ColdIndex
from projections import workflow_pages as pages
from projections.workflow_pages import ListQuery
from projections.workflows import Owner, WorkflowRow, WorkflowsView

START = datetime(2026, 1, 1, tzinfo=UTC)


def rows(count: int) -> list[WorkflowRow]:
    chance = random.Random(7)
    return [WorkflowRow(id=UUID(int=chance.getrandbits(128)), name=chance.choice(["a", "b", "Zed", "ä", "a_b"]),
                        status=chance.choice(["FINISHED", "FAILED", "CANCELED"]), owner=Owner(organization_id="o"),
                        priority=0, effective_inputs=chance.choice([0, 5, 10]), preemptible=None, submitted_by="u",
                        submitted_at=START + timedelta(seconds=chance.choice([0, 1, 2, 3]), microseconds=n % 3),
                        updated_at=START, stage_count=1, stages_ended=1) for n in range(count)]


@pytest.mark.parametrize("order_by", sorted(pages.KEYS))
def test_paging_the_cold_index_gives_the_hot_order_each_row_once(order_by):
    written = rows(40)
    index = ColdIndex(":memory:")
    index.write(written)
    expected, _ = pages.page(written, ListQuery(order_by=order_by, limit=1000))
    seen, after = [], None
    while True:
        query = ListQuery(order_by=order_by, limit=7, after=pages.decode(order_by, after) if after else None)
        page, after = pages.page(index.matching(query, None, query.limit + 1)[0], query)
        seen += page
        if after is None:
            break
    assert [r.id for r in seen] == [r.id for r in expected]


def test_the_cold_index_filters_by_status_name_and_time_as_the_hot_rows_do():
    written = rows(40)
    index = ColdIndex(":memory:")
    index.write(written)
    query = ListQuery(status="failed", q="A_", since=START + timedelta(seconds=1), limit=100)
    hot = [r for r in written if pages.matches(query, r)]
    assert {r.id for r in index.matching(query, None, 100)[0]} == {r.id for r in hot}


def test_a_scan_that_runs_out_of_budget_ends_the_page_with_a_cursor_so_nothing_is_skipped(monkeypatch):
    from adapters import cold_index
    monkeypatch.setattr(cold_index, "SCAN_BUDGET", 5)
    monkeypatch.setattr(cold_index, "SCAN_BATCH", 5)
    written = rows(40)
    wanted = {r.id for r in written if r.status == "FAILED"}
    index, seen, after, requests = ColdIndex(":memory:"), [], None, 0
    index.write(written)
    view = WorkflowsView()
    view.cold_rows = index
    while True:
        query = ListQuery(limit=100, after=pages.decode("-submitted", after) if after else None)
        page, after = view.page(query, lambda r: r.status == "FAILED")
        seen, requests = seen + page, requests + 1
        if after is None:
            break
    assert [r.id for r in seen if r.id in wanted] == [r.id for r in seen] and {r.id for r in seen} == wanted
    assert requests >= 40 // 5

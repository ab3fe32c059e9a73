"""Audit rows newest first: what a person looking into recent activity wants (the UI's audit page, `roving audit
list --newest`, `GET /v4/audit?order=newest`), paged with `next` as in log order; log order stays the default for
scripts and exports. A cursor pages on only in the order it was made in."""

import json
import re

from tests.browser.test_ui_http import session
from tests.unit.api.test_cli_objects import run
from tests.unit.api.test_other_list_pages import api, every_page, filled, whole  # noqa: F401 - the shared fixtures


def test_newest_first_pages_reach_every_row_once_in_reverse_log_order(api, filled):  # noqa: F811
    everything = whole(api, api.admin, "/v4/audit", "rows", {"limit": 10_000})
    rows, count = every_page(api, api.admin, "/v4/audit", "rows", {"limit": 3, "order": "newest"})
    assert [r["position"] for r in rows] == [r["position"] for r in reversed(everything)]
    assert count == (len(everything) + 2) // 3


def test_a_cursor_of_one_order_is_refused_in_the_other_and_a_bad_order_is_named(api, filled):  # noqa: F811
    newest = api.request("GET", "/v4/audit", api.admin, params={"limit": 2, "order": "newest"}).json()
    mixed = api.request("GET", "/v4/audit", api.admin, params={"limit": 2, "next": newest["next"]})
    assert mixed.status_code == 400 and mixed.json()["errors"][0]["path"] == "next"
    bad = api.request("GET", "/v4/audit", api.admin, params={"order": "latest"})
    assert bad.status_code == 400 and bad.json()["errors"][0]["path"] == "order"


def test_the_audit_page_and_the_cli_show_the_newest_rows_first(api, filled, capsys):  # noqa: F811
    last = whole(api, api.admin, "/v4/audit", "rows", {"limit": 10_000})[-1]["position"]
    page = api.request("GET", "/ui/audit", headers=session(api)).text
    shown = [int(p) for p in re.findall(r"<tr><td>(\d+)</td>", page.split('id="audit"')[1])]
    assert shown[0] == last and shown == sorted(shown, reverse=True)
    code, out, _ = run(api, api.admin, ["audit", "list", "--newest", "--limit", "2", "-o", "json"], capsys)
    assert code == 0 and [r["position"] for r in json.loads(out)] == [last, last - 1]
    code, out, _ = run(api, api.admin, ["audit", "list", "--limit", "2", "-o", "json"], capsys)
    assert json.loads(out)[0]["position"] < last  # without --newest: log order, as before

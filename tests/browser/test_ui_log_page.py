"""A long stage log in the UI (in-process HTTP, no browser): the page opens on its last part with "load earlier",
the plain-text copy answers only the bytes asked for (what log.js follows with), and the whole log downloads."""

from __future__ import annotations

import re

from api.http.ui.workflows import LOG_TAIL
from tests.browser.test_ui_http import session
from tests.unit.api.harness import JOB, Api

LONG = b"".join(f"line {i:07}\n".encode() for i in range(60_000))  # 780 kB: three times what the page opens on


def test_a_long_log_opens_on_its_last_part_loads_earlier_parts_by_offset_and_downloads_whole():
    api = Api()
    wid = api.request("POST", "/v4/workflows", api.admin, json={"name": "long", "definition": JOB}).json()["id"]
    api.services.logs.lines[(wid, "hello")] = LONG
    admin = session(api)
    page = api.request("GET", f"/ui/workflows/{wid}/logs/hello", headers=admin).text
    shown = re.search(r'<pre id="log" data-start="(\d+)" data-total="(\d+)">(.*?)</pre>', page, re.S)
    assert shown and int(shown[1]) == len(LONG) - LOG_TAIL and int(shown[2]) == len(LONG)
    assert shown[3].endswith("line 0059999\n") and "line 0000000" not in shown[3]
    assert 'id="log-earlier"' in page and "of 780,000 bytes" in page
    before = api.request("GET", f"/ui/workflows/{wid}/logs/hello.txt?offset=0&limit={shown[1]}", headers=admin)
    assert before.content + shown[3].encode() == LONG  # what "load earlier" prepends meets what is shown
    newer = api.request("GET", f"/ui/workflows/{wid}/logs/hello.txt?offset={len(LONG)}", headers=admin)
    assert newer.content == b"" and newer.headers["Roving-Log-Total"] == str(len(LONG))  # follow: nothing new
    whole = api.request("GET", f"/ui/workflows/{wid}/logs/hello.txt?download=true", headers=admin)
    assert whole.content == LONG and whole.headers["content-disposition"] == f'attachment; filename="{wid}-hello.log"'
    saved = api.request("GET", f"/ui/workflows/{wid}/download/logs/hello", headers=admin)  # the workflow page's link
    assert saved.content == LONG and saved.headers["content-disposition"] == whole.headers["content-disposition"]


def test_a_short_log_is_shown_whole_with_nothing_earlier_to_load():
    api = Api()
    wid = api.request("POST", "/v4/workflows", api.admin, json={"name": "short", "definition": JOB}).json()["id"]
    api.services.logs.lines[(wid, "hello")] = b"just this\n"
    page = api.request("GET", f"/ui/workflows/{wid}/logs/hello", headers=session(api)).text
    assert '<pre id="log" data-start="0" data-total="10">just this\n</pre>' in page
    assert '<p id="log-earlier-row" hidden>' in page

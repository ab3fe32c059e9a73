"""The UI over HTTP in-process (no browser): session cookie, CSRF, the API's permissions, each page answering."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from uuid import UUID

import pytest

from domain.scheduler.last_pass import LastPass
from domain.scheduler.reasons import Reason, Why
from domain.tenancy import Role, Source
from tests.unit.api.harness import JOB, PASSWORD, Api
from tests.unit.api.harness import token as api_token


@pytest.fixture
def api() -> Api:
    return Api()


def sign_in(api: Api, username: str = "admin", password: str = PASSWORD, **headers: str):
    return api.request("POST", "/ui/login", data={"username": username, "password": password}, headers=headers)


def session(api: Api, username: str = "admin") -> dict[str, str]:
    answer = sign_in(api, username)
    assert answer.status_code == 303, answer.text
    return {"Cookie": f"roving_session={answer.cookies['roving_session']}"}


def csrf(page_text: str) -> str:
    return re.search(r'name="csrf" value="([0-9a-f]+)"', page_text).group(1)


def alert(page_text: str) -> list[str]:
    return re.findall(r'role="alert"[^>]*>([^<]*)<', page_text)


def test_the_ui_root_answers_a_sign_in_form_with_a_csp_that_allows_no_inline_script(api):
    answer = api.request("GET", "/ui/")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/html")
    assert 'name="username"' in answer.text and 'name="csrf"' in answer.text
    policy = answer.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    assert "<script>" not in answer.text


def test_signing_in_sets_an_httponly_strict_session_cookie_secure_over_https(api):
    plain = sign_in(api).headers["set-cookie"]
    assert "roving_session=" in plain and "HttpOnly" in plain and "SameSite=strict" in plain
    assert "Secure" not in plain.split("roving_login")[0]
    secure = api.request("POST", "https://roving.test/ui/login", data={"username": "admin", "password": PASSWORD})
    assert "Secure" in secure.headers["set-cookie"].split("roving_login")[0]


def test_a_wrong_password_shows_one_message_and_sets_no_session(api):
    answer = sign_in(api, password="wrong")
    assert answer.status_code == 401
    assert alert(answer.text) == ["Unknown username or wrong password."]
    assert "roving_session" not in answer.headers.get("set-cookie", "")
    missing = api.request("POST", "/ui/login", data={"username": "admin"})
    assert missing.status_code == 400 and alert(missing.text) == ["Enter your password."]


def test_a_sign_in_posted_from_another_site_is_refused(api):
    for headers in ({"Origin": "https://evil.example"}, {"Sec-Fetch-Site": "cross-site"}):
        answer = sign_in(api, **headers)
        assert answer.status_code == 403 and "roving_session" not in answer.headers.get("set-cookie", "")


def test_a_page_without_a_session_sends_to_sign_in_and_back_only_to_our_own_pages(api):
    answer = api.request("GET", "/ui/workflows?status=FINISHED")
    assert answer.status_code == 303
    assert answer.headers["location"] == "/ui/login?next=%2Fui%2Fworkflows%3Fstatus%3DFINISHED"
    back = api.request("POST", "/ui/login", data={"username": "admin", "password": PASSWORD, "next": "/ui/nodes"})
    assert back.headers["location"] == "/ui/nodes"
    away = api.request("POST", "/ui/login", data={"username": "admin", "password": PASSWORD, "next": "//evil.example/"})
    assert away.headers["location"] == "/ui/"


@pytest.mark.parametrize("path", ["/ui/", "/ui/workflows", "/ui/queue", "/ui/nodes", "/ui/endpoints", "/ui/api"])
def test_every_page_answers_html_to_a_signed_in_admin(api, path):
    answer = api.request("GET", path, headers=session(api))
    assert answer.status_code == 200, answer.text
    assert 'id="logout"' in answer.text


def test_the_api_page_lists_the_openapi_operations(api):
    text = api.request("GET", "/ui/api", headers=session(api)).text
    assert "/v4/workflows/{id}/why" in text and "Submit" in text


def test_the_audit_page_says_when_the_audit_log_is_not_running(api):
    answer = api.request("GET", "/ui/audit", headers=session(api))
    assert answer.status_code == 503 and "audit log is not running" in answer.text


def test_an_unknown_status_filter_is_a_400_naming_the_field(api):
    answer = api.request("GET", "/ui/workflows?status=BOGUS", headers=session(api))
    assert answer.status_code == 400 and alert(answer.text)[0].startswith("status: expected one of")


def test_the_queue_shows_why_a_stage_waits(api):
    api.request("POST", "/v4/workflows", api.admin, json={"name": "waits", "definition": JOB})
    text = api.request("GET", "/ui/queue", headers=session(api)).text
    assert 'id="queue"' in text and "hello" in text and "waiting for the scheduler" in text


def test_the_queue_shows_a_waiting_stages_estimated_start(api):
    api.request("POST", "/v4/workflows", api.admin, json={"name": "waits", "definition": JOB})
    row = api.request("GET", "/v4/scheduler/queue", api.admin).json()["queue"][0]
    why = Why(reason=Reason.INSUFFICIENT_RESOURCES, message="no node has 64 cores free",
              detail={"estimated_start": "2026-12-04T16:30:00+00:00"})
    api.services.scheduling.publish(LastPass(reasons={row["id"]: why}))
    cookie = session(api)
    text = api.request("GET", "/ui/queue", headers=cookie).text
    assert "Estimated start" in text and "2026-12-04 16:30:00Z" in text
    listed = api.request("GET", "/ui/workflows", headers=cookie).text  # and in the workflow list's Started column
    assert '<span class="hint">est.</span> <time datetime="2026-12-04T16:30:00+00:00">' in listed


def test_a_workflow_page_draws_its_stage_graph(api):
    wid = api.request("POST", "/v4/workflows", api.admin, json={"name": "g", "definition": JOB}).json()["id"]
    text = api.request("GET", f"/ui/workflows/{wid}", headers=session(api)).text
    assert 'id="stage-graph"' in text and 'data-stage="hello"' in text


def test_a_click_on_the_submitted_column_turns_the_newest_first_order_around(api):
    for name in ("first-one", "second-one"):
        api.request("POST", "/v4/workflows", api.admin, json={"name": name, "definition": JOB})
    cookie = session(api)
    newest_first = api.request("GET", "/ui/workflows", headers=cookie).text
    assert newest_first.index("second-one") < newest_first.index("first-one")
    link = re.search(r'id="sort-submitted" href="([^"]+)">Submitted ▼', newest_first).group(1)
    oldest_first = api.request("GET", link.replace("&amp;", "&"), headers=cookie).text
    assert oldest_first.index("first-one") < oldest_first.index("second-one")
    assert 'id="sort-submitted" href="/ui/workflows?sort=submitted">Submitted ▲' in oldest_first


def test_a_tenant_sees_neither_another_tenants_workflow_nor_its_page(api):
    _, alice = api.organization_with_user("org-a", "alice")
    api.organization_with_user("org-b", "bob")
    wid = api.request("POST", "/v4/workflows", alice, json={"name": "alices-secret", "definition": JOB}).json()["id"]
    bob = session(api, "bob")
    page = api.request("GET", f"/ui/workflows/{wid}", headers=bob)
    assert page.status_code == 404 and "alices-secret" not in page.text
    assert "alices-secret" not in api.request("GET", "/ui/workflows", headers=bob).text
    assert api.request("GET", f"/ui/workflows/{wid}/events", headers=bob).status_code == 404
    assert "alices-secret" in api.request("GET", f"/ui/workflows/{wid}", headers=session(api, "alice")).text


def test_a_tenant_is_refused_a_node_action_even_with_a_good_csrf_token(api):
    agent = api_token("agent", Role.USER, source=Source.AGENT)
    node = {"name": "local-1", "cpu": 2, "memory": 2**31}
    assert api.request("POST", "/v4/agent/register", agent, json=node).status_code in (200, 201)
    api.organization_with_user("org-a", "alice")
    alice = session(api, "alice")
    token = csrf(api.request("GET", "/ui/nodes", headers=alice).text)
    answer = api.request("POST", "/ui/nodes/local-1/cordon", headers=alice, data={"csrf": token, "reason": "x"})
    assert answer.status_code == 403 and "cluster admin" in answer.text
    assert api.request("GET", "/v4/nodes/local-1/holds", api.admin).json()["holds"] == []


def test_posts_need_the_sessions_csrf_token(api):
    admin = session(api)
    token = csrf(api.request("GET", "/ui/nodes", headers=admin).text)
    assert api.request("POST", "/ui/logout", headers=admin, data={}).status_code == 403
    other = csrf(api.request("GET", "/ui/nodes", headers=session(api, "admin")).text)
    assert other != token  # bound to each session, so one session's token is no good for another
    assert api.request("POST", "/ui/logout", headers=admin, data={"csrf": other}).status_code == 403
    out = api.request("POST", "/ui/logout", headers=admin, data={"csrf": token})
    assert out.status_code == 303 and 'roving_session=""' in out.headers["set-cookie"]


def test_a_stage_log_page_shows_the_log_and_a_plain_text_copy(api):
    wid = api.request("POST", "/v4/workflows", api.admin, json={"name": "logs", "definition": JOB}).json()["id"]
    api.services.logs.lines[(wid, "hello")] = b"epoch 1\n<b>epoch 2</b>\n"
    admin = session(api)
    page = api.request("GET", f"/ui/workflows/{wid}/logs/hello", headers=admin)
    assert page.status_code == 200 and "&lt;b&gt;epoch 2&lt;/b&gt;" in page.text  # job output is text, never markup
    plain = api.request("GET", f"/ui/workflows/{wid}/logs/hello.txt", headers=admin)
    assert plain.text == "epoch 1\n<b>epoch 2</b>\n" and plain.headers["content-type"].startswith("text/plain")
    assert api.request("GET", f"/ui/workflows/{wid}/logs/nope", headers=admin).status_code == 404


def test_an_admin_deprovisions_a_node_from_the_nodes_page(api):
    agent = api_token("agent", Role.USER, source=Source.AGENT)
    assert api.request("POST", "/v4/agent/register", agent, json={"name": "n1", "cpu": 2, "memory": 2**31}).is_success
    admin = session(api)
    token = csrf(api.request("GET", "/ui/nodes", headers=admin).text)
    answer = api.request("POST", "/ui/nodes/n1/deprovision", headers=admin, data={"csrf": token})
    assert answer.status_code == 303 and answer.headers["location"] == "/ui/nodes?done=deprovision&node=n1"
    holds = api.request("GET", "/v4/nodes/n1/holds", api.admin).json()["holds"]
    assert [(h["effect"], h["source"], h["by"]) for h in holds] == [("deprovision", "admin", "admin")]
    unknown = api.request("POST", "/ui/nodes/n1/explode", headers=admin, data={"csrf": token})
    assert unknown.status_code == 404


def test_an_overlong_hold_reason_is_a_400_naming_the_field(api):
    agent = api_token("agent", Role.USER, source=Source.AGENT)
    api.request("POST", "/v4/agent/register", agent, json={"name": "n1", "cpu": 2, "memory": 2**31})
    admin = session(api)
    token = csrf(api.request("GET", "/ui/nodes", headers=admin).text)
    answer = api.request("POST", "/ui/nodes/n1/cordon", headers=admin, data={"csrf": token, "reason": "x" * 501})
    assert answer.status_code == 400 and alert(answer.text)[0].startswith("reason: expected at most 500")
    assert api.request("GET", "/v4/nodes/n1/holds", api.admin).json()["holds"] == []


def test_the_ui_session_lasts_its_own_length_not_the_short_access_token():
    api = Api({"ROVING_TOKEN_TTL": "1m", "ROVING_UI_SESSION_TTL": "8h"})
    cookies = [c for c in sign_in(api).headers.get_list("set-cookie") if c.startswith("roving_session=")]
    assert len(cookies) == 1 and "Max-Age=28800" in cookies[0]


def test_a_nodes_page_lists_its_event_log_newest_first(api):
    agent = api_token("agent", Role.USER, source=Source.AGENT)
    api.request("POST", "/v4/agent/register", agent, json={"name": "n1", "cpu": 2, "memory": 2**31})
    admin = session(api)
    token = csrf(api.request("GET", "/ui/nodes", headers=admin).text)
    api.request("POST", "/ui/nodes/n1/cordon", headers=admin, data={"csrf": token, "reason": "bios update"})
    api.request("POST", "/ui/nodes/n1/uncordon", headers=admin, data={"csrf": token})
    events = api.request("GET", "/v4/nodes/n1/events", api.admin).json()["events"]
    said = [e["message"] for e in events]
    assert said[:2] == ["cordon hold released (admin)", "cordon hold placed (admin): bios update"]
    assert said[-1] == "registered as n1: 2 cpu, 2.0 GiB" and "ready (agent epoch 1)" in said
    assert events[1]["by"] == "admin" and events[1]["type"] == "HoldPlaced"
    page = api.request("GET", "/ui/nodes/n1", headers=admin)
    assert page.status_code == 200 and 'id="node-events"' in page.text and "bios update" in page.text
    assert 'href="/ui/nodes/n1"' in api.request("GET", "/ui/nodes", headers=admin).text
    assert api.request("GET", "/ui/nodes/ghost", headers=admin).status_code == 404
    here = api.request("POST", "/ui/nodes/n1/cordon", headers=admin, data={"csrf": token, "back": "node"})
    assert here.headers["location"] == "/ui/nodes/n1?done=cordon&node=n1"  # back to the page it was sent from
    assert "Cordoned n1." in api.request("GET", here.headers["location"], headers=admin).text


def test_a_nodes_event_log_names_another_tenants_work_by_no_id(api):
    _, alice = api.organization_with_user("org-a", "alice")
    _, bob = api.organization_with_user("org-b", "bob")
    agent = api_token("agent", Role.USER, source=Source.AGENT)
    node = api.request("POST", "/v4/agent/register", agent, json={"name": "n1", "cpu": 2, "memory": 2**31}).json()
    api.request("POST", "/v4/workflows", alice, json={"name": "alices", "definition": JOB})
    allocation = api.request("GET", "/v4/scheduler/queue", api.admin).json()["queue"][0]["id"]
    roving = api.services.roving
    roving.place(UUID(allocation), [UUID(node["node_id"])], "scheduler", datetime.now(UTC))
    api.services.tailer.wait_for(roving.last_position)

    def placed(token: str) -> list[str | None]:
        events = api.request("GET", "/v4/nodes/n1/events", token).json()["events"]
        return [e["allocation"] for e in events if e["type"] == "AllocationPlaced"]

    assert placed(alice) == [allocation] and placed(api.admin) == [allocation]
    assert placed(bob) == [None]
    wid = api.request("GET", "/v4/scheduler/queue", api.admin).json()["queue"][0]["workflow_id"]
    page = api.request("GET", f"/ui/workflows/{wid}", headers=session(api, "alice")).text
    assert page.count('href="/ui/nodes/n1"') == 2  # the stage's node and the nodes the workflow used link to it


def test_the_dashboard_counts_the_clusters_nodes_by_their_strongest_hold(api):
    agent = api_token("agent", Role.USER, source=Source.AGENT)
    for name in ("n1", "n2", "n3"):
        api.request("POST", "/v4/agent/register", agent, json={"name": name, "cpu": 2, "memory": 2**31})
    api.request("POST", "/v4/nodes/n1/cordon", api.admin, json={"reason": "bios"})
    api.request("POST", "/v4/nodes/n2/cordon", api.admin, json={"reason": "bios"})
    api.request("POST", "/v4/nodes/n2/evict", api.admin, json={"reason": "ecc"})
    text = api.request("GET", "/ui/", headers=session(api)).text
    holds = text[text.index('id="holds"'):]
    tiles = re.findall(r'<span class="count">(\d+)</span><span class="label">([^<]+)</span>', holds.split("</div></div>")[0])
    assert sorted((label, int(n)) for n, label in tiles) == [("cordon", 1), ("evict", 1), ("no hold", 1)]
    assert "Nodes by hold in cluster <code>local</code>" in text


def test_the_dashboard_says_the_head_jobs_reservation_in_words():
    from api.http.ui.dashboard import pass_figures

    last = {"placed": 2, "reservation": {"allocation_id": "1269ccd0-79a3", "node_ids": ["61b1", "ffff"],
                                         "estimated_start": "2026-12-04T15:42:38+00:00"}}
    rows = dict(pass_figures(last, {"61b1": "local-1"}))
    assert rows["placed"] == 2
    assert rows["reservation"] == ('allocation 1269ccd0 on <a href="/ui/nodes/local-1">local-1</a>, ffff, estimated '
                                   'start <time datetime="2026-12-04T15:42:38+00:00">2026-12-04 15:42:38Z</time>')


def test_a_missing_static_file_is_a_404_not_a_server_error(api):
    assert api.request("GET", "/ui/static/log.js").status_code == 200
    for path in ("/ui/static/no-such-file.js", "/ui/static/", "/ui/static/../routes.py", "/ui/static/%2e%2e/core.py"):
        answer = api.request("GET", path)
        assert answer.status_code == 404, (path, answer.status_code)

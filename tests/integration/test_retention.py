"""The event stream's retention on the real stack (embedded nats-server, JetStream log, DuckDB audit): finished
workflows past the admin's limit are archived to Parquet and purged from the stream, and everything a user asked of
them answers as before: describe and events (200), the audit's rows (to their own organization only); live work,
organizations and users keep their histories; a rebuilt audit and views read what the log no longer holds."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import time

import httpx
import pytest

from adapters.event_archive import EventArchive
from adapters.retention import Retention
from api.composition.settings import load_settings
from api.composition.stack import Stack
from tests.unit.api.harness import JOB, PASSWORD
from tests.unit.api.test_cli import run as cli

ENDED_EACH = 3


class Running:
    """A started stack and HTTP calls into its app (no socket)."""

    def __init__(self, data_dir) -> None:
        settings = load_settings({"ROVING_DATA_DIR": str(data_dir), "ROVING_CLUSTER": "retain",
                                  "ROVING_HOT_WORKFLOWS": "1", "ROVING_RETENTION_INTERVAL": "0.3",
                                  "ROVING_JOB_LOG_MAX_AGE": "2d", "ROVING_JOB_LOG_MAX_BYTES": "1GiB"})
        self.stack = Stack(settings, scheduler=False, provisioners=False).start()
        self.http = self.stack.app()
        self.admin = (data_dir / "admin.token").read_text().strip()

    def call(self, method: str, path: str, token: str | None = None, headers: dict | None = None,
             **kwargs) -> httpx.Response:
        async def send() -> httpx.Response:
            transport = httpx.ASGITransport(app=self.http)
            async with httpx.AsyncClient(transport=transport, base_url="http://roving.test") as client:
                sent = {**(headers or {}), "Authorization": f"Bearer {token or self.admin}"}
                return await client.request(method, path, headers=sent, **kwargs)
        return asyncio.run(send())

    request = call  # the CLI tests' client (tests.unit.api.test_cli.client_for) calls it so

    def user(self, org_id: str, name: str, role: str, org: str) -> str:
        body = {"username": name, "email": f"{name}@{org}.org", "password": PASSWORD, "role": role}
        assert self.call("POST", f"/v4/organizations/{org_id}/users", json=body).status_code == 201
        return self.call("POST", "/v4/auth/login", json={"username": name, "password": PASSWORD}).json()["token"]

    def stream(self) -> tuple[int, int, int]:
        connection = self.stack.roving.recorder.connection
        return connection.run(lambda: connection.client.stream_size(connection.names.events))

    def subject_count(self, aggregate_id: str) -> int:
        connection = self.stack.roving.recorder.connection
        subject = connection.names.aggregate_filter("events", aggregate_id)

        async def count() -> int:
            msgs, pending = await connection.client.direct_batch(connection.names.events, subject, 1, 1000, 5.0)
            return len(msgs) + pending
        return connection.run(count)

    def status(self) -> dict:
        answer = self.call("GET", "/v4/audit/retention")
        assert answer.status_code == 200, answer.text
        return answer.json()

    def stop(self) -> None:
        self.stack.stop()


def wait_for(check, seconds: float = 60.0, what: str = ""):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def answers(running: Running, token: str, wid: str) -> dict:
    found = {part: running.call("GET", f"/v4/workflows/{wid}{part}", token) for part in ("", "/events")}
    assert all(a.status_code == 200 for a in found.values()), {p: a.text for p, a in found.items()}
    return {part: answer.json() for part, answer in found.items()}


def audited(running: Running) -> None:
    """The audit feed wrote every event this stack saved so far (it writes in log order): a count read now is whole,
    not the first rows of a feed still catching up (a rebuilt audit's archived rows come back in one INSERT, so the
    first count of a restored workflow is whole already)."""
    assert running.stack.audit_feed.wait_for(running.stack.roving.last_position, timeout=60), "the audit lagged 60 s"


def audit_count(running: Running, token: str, wid: str) -> int:
    answer = running.call("POST", "/v4/audit/query", token, json={"sql": f"SELECT count(*) FROM audit WHERE workflow = '{wid}'"})
    assert answer.status_code == 200, answer.text
    return answer.json()["rows"][0][0]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Two organizations' finished workflows and one live one; every answer about them taken before any retention,
    then the retention set to one second and waited on until every cold one was archived and purged."""
    data_dir = tmp_path_factory.mktemp("roving")
    running = Running(data_dir)
    acme = running.call("POST", "/v4/organizations", json={"name": "acme"}).json()["id"]
    globex = running.call("POST", "/v4/organizations", json={"name": "globex"}).json()["id"]
    users = {"alice": running.user(acme, "alice", "user", "acme"), "olga": running.user(acme, "olga", "org_owner", "acme"),
             "gus": running.user(globex, "gus", "org_owner", "globex")}
    ended = {"alice": [], "gus": []}
    for who in ended:
        for n in range(ENDED_EACH):
            wid = running.call("POST", "/v4/workflows", users[who], json={"name": f"{who}-{n}", "definition": JOB}).json()["id"]
            assert running.call("PATCH", f"/v4/workflows/{wid}:stop", users[who]).status_code == 200
            ended[who].append(wid)
    live = running.call("POST", "/v4/workflows", users["alice"], json={"name": "live", "definition": JOB}).json()["id"]
    owners = {wid: who for who, ids in ended.items() for wid in ids}
    before = {wid: answers(running, users[who], wid) for wid, who in owners.items()}
    audited(running)
    counted = {wid: audit_count(running, running.admin, wid) for wid in owners}
    agent = (data_dir / "agent.token").read_text().strip()
    node = running.call("POST", "/v4/agent/register", agent, json={"name": "n1", "cpu": 4, "memory": 2**30})
    assert node.status_code == 200, node.text
    node_events = running.subject_count(node.json()["node_id"])
    live_events = running.subject_count(live)
    orgs_events = running.subject_count(acme)
    stream_before = running.stream()
    assert running.status()["archived"]["workflows"] == 0
    changed = running.call("PUT", "/v4/admin/centralconfig", json={"retention.finishedAfter": "1s"})
    assert changed.status_code == 200, changed.text
    # the hot set keeps the newest finished one (ROVING_HOT_WORKFLOWS=1): every other one goes
    cut = [wid for wid in owners if wid != ended["gus"][-1]]
    wait_for(lambda: (lambda s: s["workflows"] == len(cut) and s["pending_purge"] == 0)(running.status()["archived"]),
             what="the archive and the purge")
    world = {"running": running, "users": users, "ended": ended, "owners": owners, "before": before, "counted": counted,
           "live": live, "live_events": live_events, "orgs_events": orgs_events, "stream_before": stream_before,
           "cut": cut, "acme": acme, "data_dir": data_dir, "node": (node.json()["node_id"], node_events)}
    yield world
    world["running"].stop()  # the last test starts it again


def test_archived_workflows_leave_the_stream_and_their_events_are_in_the_parquet_archive(world):
    running, cut = world["running"], world["cut"]
    status = running.status()
    assert status["archived"]["pending_purge"] == 0 and status["archived"]["files"] >= 1
    assert all(running.subject_count(wid) == 0 for wid in cut)
    with running.stack.audit_store.connection.cursor() as cursor:
        allocations = [a for (a,) in cursor.execute("SELECT DISTINCT aggregate_id FROM audit_events WHERE "
                                                   "aggregate_kind = 'allocation' AND workflow IN (SELECT unnest($1))",
                                                   [cut]).fetchall()]
    assert len(allocations) >= len(cut) and all(running.subject_count(a) == 0 for a in allocations)
    messages_before, bytes_before, _ = world["stream_before"]
    messages, size, first = running.stream()
    assert messages <= messages_before - status["archived"]["events"] + 10  # a few config and login events since
    assert status["archived"]["events"] >= len(cut) * 3 and size < bytes_before
    assert status["policy"] == {"finished_after_seconds": 1.0, "max_bytes": 0, "on": True}
    assert status["stream"]["messages"] == messages
    metrics = running.call("GET", "/metrics").text
    archived = re.search(r"^roving_retention_archived_workflows_total (\S+)$", metrics, re.M)
    assert archived and float(archived.group(1)) >= len(cut)
    assert re.search(r"^roving_retention_purged_messages_total [1-9]", metrics, re.M)


def test_the_hot_workflow_a_live_one_the_organizations_and_the_nodes_keep_their_histories(world):
    running = world["running"]
    assert running.subject_count(world["ended"]["gus"][-1]) > 0
    assert running.subject_count(world["live"]) == world["live_events"] > 0
    assert running.subject_count(world["acme"]) == world["orgs_events"] > 0
    node, node_events = world["node"]
    assert running.subject_count(node) == node_events > 0


def test_a_purged_workflow_still_answers_describe_and_events_as_before_and_a_stop_says_it_ended(world):
    running, users = world["running"], world["users"]
    for wid in world["cut"]:
        assert answers(running, users[world["owners"][wid]], wid) == world["before"][wid]
    stopped = running.call("PATCH", f"/v4/workflows/{world['cut'][0]}:stop", users[world["owners"][world["cut"][0]]])
    assert stopped.status_code == 409 and "already ended" in stopped.json()["error"], stopped.text


def test_the_audit_still_finds_archived_workflows_and_a_tenant_only_their_own(world):
    running, users, ended = world["running"], world["users"], world["ended"]
    for wid in world["cut"]:
        assert audit_count(running, running.admin, wid) == world["counted"][wid]
    assert audit_count(running, users["olga"], ended["alice"][0]) == world["counted"][ended["alice"][0]]
    assert audit_count(running, users["olga"], ended["gus"][0]) == 0
    assert audit_count(running, users["gus"], ended["alice"][0]) == 0


def test_only_a_cluster_admin_sees_the_retention(world):
    running, users = world["running"], world["users"]
    assert running.call("GET", "/v4/audit/retention", users["olga"]).status_code == 403


def test_roving_audit_retention_shows_the_policy_and_what_was_archived(world, capsys):
    running = world["running"]
    code, out, _ = cli(running, running.admin, ["audit", "retention", "-o", "json"], capsys)
    assert code == 0 and json.loads(out)["archived"]["workflows"] == len(world["cut"])
    code, out, _ = cli(running, running.admin, ["audit", "retention"], capsys)
    assert code == 0 and "policy: finished workflows after" in out
    assert f"archived: {len(world['cut'])} workflows" in out
    code, _, err = cli(running, world["users"]["olga"], ["audit", "retention"], capsys)
    assert code != 0 and "cluster admins" in err


def test_the_archive_is_closed_to_every_other_local_user(world):
    """Every tenant's events are in it (definitions, names, who did what): as the audit and the signing key are."""
    archive = world["data_dir"] / "archive"
    held = [p for p in archive.iterdir() if p.is_file()]
    assert any(p.name.startswith("events-") for p in held) and (archive / "index.sqlite") in held
    assert archive.stat().st_mode & 0o777 == 0o700
    assert {p.name: p.stat().st_mode & 0o777 for p in held} == {p.name: 0o600 for p in held}


def test_another_tenants_purged_workflow_is_not_found_whatever_is_asked_of_it(world):
    running, gus, alice_wid = world["running"], world["users"]["gus"], world["ended"]["alice"][0]
    assert alice_wid in world["cut"]
    for method, path in (("GET", ""), ("GET", "/events"), ("GET", "/definition"), ("POST", ":resubmit"),
                         ("POST", ":retry")):
        answer = running.call(method, f"/v4/workflows/{alice_wid}{path}", gus)
        assert answer.status_code == 404, (path, answer.text)


def test_a_purged_workflow_of_ones_own_can_be_read_as_a_fuzzfile_and_resubmitted(world):
    running, alice, wid = world["running"], world["users"]["alice"], world["ended"]["alice"][0]
    definition = running.call("GET", f"/v4/workflows/{wid}/definition", alice)
    assert definition.status_code == 200, definition.text
    again = running.call("POST", f"/v4/workflows/{wid}:resubmit", alice, json={})
    assert again.status_code == 201, again.text
    assert running.call("PATCH", f"/v4/workflows/{again.json()['id']}:stop", alice).status_code == 200


def test_the_job_log_stream_holds_the_limits_the_admin_set(world):
    connection = world["running"].stack.leases.connection
    logs = world["running"].stack.services.logs.logs
    config = connection.run(lambda: connection.client.js.stream_info(logs.stream)).config
    assert (config.max_age, config.max_bytes) == (2 * 86400, 2**30)


def test_a_round_cut_short_before_its_purge_purges_next_time_and_an_event_archived_twice_counts_once(world,
                                                                                                   monkeypatch):
    running, alice = world["running"], world["users"]["alice"]
    wid = running.call("POST", "/v4/workflows", alice, json={"name": "cut-short", "definition": JOB}).json()["id"]
    assert running.call("PATCH", f"/v4/workflows/{wid}:stop", alice).status_code == 200
    events = running.subject_count(wid)
    world["before"][wid] = answers(running, alice, wid)

    purge = Retention._purge_subject

    def crashed_before_its_purge(self, subject, below):
        if wid in subject:
            raise OSError("the process stopped here")
        return purge(self, subject, below)
    monkeypatch.setattr(Retention, "_purge_subject", crashed_before_its_purge)
    after = running.call("POST", "/v4/workflows", alice, json={"name": "pushes-it-cold", "definition": JOB}).json()["id"]
    running.call("PATCH", f"/v4/workflows/{after}:stop", alice)  # the newest finished: the one the hot set keeps
    archive = EventArchive(world["data_dir"] / "archive")
    wait_for(lambda: archive.events_of(wid), what="the workflow archived")
    assert running.status()["archived"]["pending_purge"] >= 1
    assert running.subject_count(wid) == events > 0
    newest = archive.files()[-1]
    shutil.copy(newest, newest.with_name(newest.name.replace("events-", "events-0again-")))  # as a crash re-archives
    monkeypatch.undo()
    wait_for(lambda: running.status()["archived"]["pending_purge"] == 0, what="the purge")
    assert running.subject_count(wid) == 0, "a purge that failed is done by a later round"
    assert [r.version for r in archive.events_of(wid)] == list(range(1, events + 1))
    world["cut"].append(wid)
    world["owners"][wid] = "alice"
    world["counted"][wid] = audit_count(running, running.admin, wid)


def test_over_its_size_budget_the_stream_loses_its_oldest_finished_workflows_as_many_as_free_the_bytes(world):
    running, alice = world["running"], world["users"]["alice"]
    assert running.call("PUT", "/v4/admin/centralconfig", json={"retention.finishedAfter": "365d",
                                                                 "retention.maxBytes": "1GiB"}).status_code == 200
    ids = []
    for name in ("oldest", "middle", "newest"):
        ids.append(running.call("POST", "/v4/workflows", alice, json={"name": name, "definition": JOB}).json()["id"])
        assert running.call("PATCH", f"/v4/workflows/{ids[-1]}:stop", alice).status_code == 200
    oldest, middle, newest = ids
    world["before"][oldest] = answers(running, alice, oldest)
    archived = running.status()["archived"]["workflows"]
    # over by a few bytes (and this change's own event): the oldest cold workflow frees them, the next stays
    budget = running.stream()[1] - 1
    assert running.call("PUT", "/v4/admin/centralconfig", json={"retention.maxBytes": budget}).status_code == 200
    wait_for(lambda: running.status()["archived"]["workflows"] > archived, what="a workflow cut for the size budget")
    time.sleep(1.0)  # rounds go on every 0.3 s: under the budget now, they cut nothing more
    assert running.status()["archived"]["workflows"] == archived + 1
    assert running.subject_count(oldest) > 0 and running.subject_count(middle) > 0  # the older hot one went first
    assert running.call("PUT", "/v4/admin/centralconfig", json={"retention.maxBytes": "1KiB"}).status_code == 200
    wait_for(lambda: running.subject_count(oldest) == running.subject_count(middle) == 0, what="both cut")
    assert running.subject_count(newest) > 0  # the hot set's: not cold, not cut
    assert running.status()["policy"] == {"finished_after_seconds": 365 * 86400, "max_bytes": 1024, "on": True}
    world["cut"].append(oldest)
    world["owners"][oldest] = "alice"
    world["counted"][oldest] = audit_count(running, running.admin, oldest)


def test_a_rebuilt_audit_and_views_read_what_the_log_no_longer_holds(world, monkeypatch):
    """The last test: the stack restarts with neither its audit file, nor its views' snapshot and cold index, nor
    the archive's index (rebuilt from the files, one of them written twice), and with one workflow archived whose
    purge had not happened: its events are in the log and the archive both, and the audit counts them once."""
    running, data_dir, users = world["running"], world["data_dir"], world["users"]
    unpurged = stopped_and_cold(running, users["alice"], "unpurged")
    monkeypatch.setattr(Retention, "_purge_subject", lambda *_: 0)  # as if the process stopped before its purge
    wait_for(lambda: EventArchive(data_dir / "archive").events_of(unpurged), what="the workflow archived")
    audited(running)
    counted = audit_count(running, running.admin, unpurged)
    running.stop()
    monkeypatch.undo()
    for gone in ("audit.duckdb", "audit.duckdb.wal", "views.snapshot", "archive/index.sqlite"):
        (data_dir / gone).unlink(missing_ok=True)
    shutil.rmtree(data_dir / "views", ignore_errors=True)
    again = world["running"] = Running(data_dir)
    wait_for(lambda: again.stack.tailer.caught_up.is_set(), what="the views")
    for wid in world["cut"]:
        assert wait_for(lambda w=wid: audit_count(again, again.admin, w), what="the restored audit") == world["counted"][wid]
        assert answers(again, users[world["owners"][wid]], wid) == world["before"][wid]
    assert audit_count(again, users["gus"], world["ended"]["alice"][0]) == 0
    assert again.subject_count(unpurged) > 0 and audit_count(again, again.admin, unpurged) == counted
    later = again.call("POST", "/v4/workflows", users["alice"], json={"name": "later", "definition": JOB}).json()["id"]
    assert wait_for(lambda: audit_count(again, again.admin, later), what="the feed going on") > 0


def stopped_and_cold(running: Running, token: str, name: str) -> str:
    """A workflow submitted and stopped, then pushed out of the hot set (of one) by another that ends after it."""
    wid = running.call("POST", "/v4/workflows", token, json={"name": name, "definition": JOB}).json()["id"]
    assert running.call("PATCH", f"/v4/workflows/{wid}:stop", token).status_code == 200
    after = running.call("POST", "/v4/workflows", token, json={"name": f"{name}-next", "definition": JOB}).json()["id"]
    assert running.call("PATCH", f"/v4/workflows/{after}:stop", token).status_code == 200
    return wid

"""The audit routes answer cluster admins and organization owners from DuckDB, and refuse everything else."""

import json
from concurrent.futures import ThreadPoolExecutor

import duckdb
import pytest
import yaml

from adapters.audit_feed import AuditFeed
from adapters.audit_log import AuditLog
from adapters.duckdb_store import AuditStore
from api.cli.main import build_parser, execute
from domain.tenancy import Source
from projections.audit import AuditProjection
from tests.unit.api.harness import JOB, PASSWORD, Api, token
from tests.unit.api.test_cli import client_for


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    """The in-process API with an audit log; `sync(api.feed)` writes what the log holds so far."""
    running = Api()
    store = AuditStore(tmp_path_factory.mktemp("audit") / "audit.duckdb")
    running.feed = AuditFeed(running.services.roving.recorder, AuditProjection(store, "test"))
    running.services.audit = AuditLog(store)
    yield running
    store.close()


@pytest.fixture(scope="module")
def acme(api):
    """(org id, alice's token, her workflow's id) with the log fed into the audit table."""
    org_id, alice = api.organization_with_user("acme", "alice")
    answer = api.request("POST", "/v4/workflows", alice, json={"name": "hello", "definition": JOB})
    assert answer.status_code == 201, answer.text
    api.organization_with_user("globex", "bob")
    sync(api.feed)
    return org_id, alice, answer.json()["id"]


def sync(feed: AuditFeed) -> None:
    """One feed round after another until the log has nothing more, without the thread."""
    while feed.read_page():
        pass


def owner_of(api: Api, org_id: str) -> str:
    """The token of olga, an owner of the organization (a real account: tokens speak only for accounts)."""
    body = {"username": "olga", "email": "olga@acme.org", "password": PASSWORD, "role": "org_owner"}
    api.request("POST", f"/v4/organizations/{org_id}/users", api.admin, json=body)  # 409 once she exists
    return api.request("POST", "/v4/auth/login", json={"username": "olga", "password": PASSWORD}).json()["token"]


def test_a_cluster_admin_lists_a_workflows_events_with_who_did_them(api, acme):
    _, _, workflow = acme
    rows = api.request("GET", "/v4/audit", api.admin, params={"workflow": workflow}).json()["rows"]
    assert rows and {r["workflow"] for r in rows} == {workflow}
    submitted = next(r for r in rows if r["event_type"].endswith("Submitted"))
    assert (submitted["principal"], submitted["aggregate_kind"]) == ("alice", "workflow")


def test_filters_narrow_the_rows_and_after_pages_on(api, acme):
    everything = api.request("GET", "/v4/audit", api.admin, params={"limit": 1000}).json()["rows"]
    first_two = api.request("GET", "/v4/audit", api.admin, params={"limit": 2}).json()["rows"]
    following = api.request("GET", "/v4/audit", api.admin, params={"limit": 2, "after": first_two[-1]["position"]})
    assert [r["position"] for r in first_two + following.json()["rows"]] == [r["position"] for r in everything[:4]]
    by_alice = api.request("GET", "/v4/audit", api.admin, params={"principal": "alice"}).json()["rows"]
    assert by_alice and {r["principal"] for r in by_alice} == {"alice"}
    late = api.request("GET", "/v4/audit", api.admin, params={"since": "2999-01-01T00:00:00"}).json()["rows"]
    assert late == []


def test_a_bad_filter_is_a_400_naming_the_parameter(api, acme):
    for params, path in (({"since": "yesterday"}, "since"), ({"limit": "many"}, "limit"), ({"limit": 0}, "limit"),
                         ({"type": "Submitted"}, "type")):  # an unknown filter is not ignored
        answer = api.request("GET", "/v4/audit", api.admin, params=params)
        assert answer.status_code == 400 and answer.json()["errors"][0]["path"] == path, answer.text


def test_an_organization_owner_reads_only_their_organization(api, acme):
    org_id, _, workflow = acme
    olga = owner_of(api, org_id)
    rows = api.request("GET", "/v4/audit", olga, params={"limit": 1000}).json()["rows"]
    assert rows and {r["organization"] for r in rows} == {org_id}
    counted = api.request("POST", "/v4/audit/query", olga,
                          json={"sql": "SELECT DISTINCT organization FROM audit"}).json()
    assert counted["rows"] == [[org_id]]
    other = api.request("GET", "/v4/audit", olga, params={"organization": "someone-else"})
    assert other.status_code == 403


def test_an_organization_owner_sees_their_members_workflow(api, acme):
    org_id, _, workflow = acme
    rows = api.request("GET", "/v4/audit", owner_of(api, org_id), params={"workflow": workflow}).json()["rows"]
    assert rows and {r["organization"] for r in rows} == {org_id}


def test_users_and_agents_cannot_read_the_audit_log(api, acme):
    _, alice, _ = acme
    agent = token("agent", source=Source.AGENT)
    for bearer in (alice, agent):
        assert api.request("GET", "/v4/audit", bearer).status_code == 403
        assert api.request("POST", "/v4/audit/query", bearer, json={"sql": "SELECT 1"}).status_code == 403
        assert api.request("GET", "/v4/audit/export.parquet", bearer).status_code == 403


def test_sql_answers_with_columns_rows_and_whether_it_was_cut(api, acme):
    answer = api.request("POST", "/v4/audit/query", api.admin,
                         json={"sql": "SELECT principal, count(*) AS n, max(time) AS last FROM audit "
                                      "WHERE principal = 'alice' GROUP BY principal"})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert (body["columns"], body["rows"][0][:1], body["truncated"]) == (["principal", "n", "last"], ["alice"], False)


@pytest.mark.parametrize("sql, reason", [
    ("ATTACH '/tmp/other.duckdb' AS other", "ATTACH statements are refused"),
    ("COPY audit TO '/tmp/out.parquet' (FORMAT parquet)", "COPY statements are refused"),
    ("SELECT * FROM read_parquet('/tmp/x.parquet')", "read_parquet() are refused"),
    ("SELECT * FROM audit_events", "only the audit view can be read"),
    ("SELECT no_such_column FROM audit", "no_such_column"),
])
def test_refused_statements_are_a_400_naming_the_reason(api, acme, sql, reason):
    answer = api.request("POST", "/v4/audit/query", api.admin, json={"sql": sql})
    assert answer.status_code == 400 and reason in answer.json()["error"], answer.text
    assert answer.json()["errors"][0]["path"] == "sql"


def test_a_body_without_sql_is_a_400_naming_the_field(api, acme):
    answer = api.request("POST", "/v4/audit/query", api.admin, json={"query": "SELECT 1"})
    assert answer.status_code == 400


def test_the_export_is_a_parquet_file_of_every_filtered_row(api, acme, tmp_path):
    _, _, workflow = acme
    answer = api.request("GET", "/v4/audit/export.parquet", api.admin, params={"workflow": workflow, "limit": 1})
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "application/vnd.apache.parquet"
    (tmp_path / "audit.parquet").write_bytes(answer.content)
    listed = api.request("GET", "/v4/audit", api.admin, params={"workflow": workflow}).json()["rows"]
    with duckdb.connect() as reader:
        reader.execute("CREATE TABLE exported AS SELECT * FROM read_parquet($1)", [str(tmp_path / "audit.parquet")])
        exported = reader.execute("SELECT position, workflow FROM exported ORDER BY position").fetchall()
    assert exported == [(r["position"], workflow) for r in listed]


def test_the_feed_thread_catches_up_and_follows_new_events(api, acme, tmp_path):
    store = AuditStore(tmp_path / "followed.duckdb")
    recorder = api.services.roving.recorder
    with AuditFeed(recorder, AuditProjection(store, "test"), page=3, poll_seconds=0.01) as feed:
        assert feed.caught_up.wait(5)
        assert feed.wait_for(recorder.max_notification_id(), timeout=5)
        api.organization_with_user("initech", "peter")
        assert feed.wait_for(recorder.max_notification_id(), timeout=5)
    assert store.position("test") == recorder.max_notification_id()
    store.close()


class FlakyRecorder:
    """Fails its first read, then answers as the real recorder does."""

    def __init__(self, recorder):
        self.recorder, self.failures = recorder, 1

    def select_notifications(self, **kwargs):
        if self.failures:
            self.failures -= 1
            raise OSError("nats went away")
        return self.recorder.select_notifications(**kwargs)


def test_a_failed_read_is_retried_from_the_last_position_without_duplicates(api, acme, tmp_path):
    store = AuditStore(tmp_path / "retried.duckdb")
    recorder = api.services.roving.recorder
    with AuditFeed(FlakyRecorder(recorder), AuditProjection(store, "test"), retry_seconds=0.01) as feed:
        assert feed.wait_for(recorder.max_notification_id(), timeout=5)
    with store.connection.cursor() as cursor:
        (count, distinct) = cursor.execute("SELECT count(*), count(DISTINCT position) FROM audit_events").fetchone()
    assert count == distinct == len(recorder.select_notifications(start=1, limit=100_000))
    store.close()


def test_without_an_audit_log_the_routes_say_it_is_not_running():
    bare = Api()
    assert bare.request("GET", "/v4/audit", bare.admin).status_code == 503


def cli(api, bearer, argv, capsys):
    """Exit code, output and errors of one `roving` command against the in-process API."""
    code = execute(build_parser().parse_args(argv), client_for(api, bearer))
    captured = capsys.readouterr()
    return code, "".join(line for line in captured.out.splitlines(True) if " request " not in line), captured.err


def test_roving_audit_list_prints_a_table_or_the_rows_as_json(api, acme, capsys):
    _, _, workflow = acme
    code, out, _ = cli(api, api.admin, ["audit", "list", "--workflow", workflow, "--type", "Workflow.Submitted"], capsys)
    assert code == 0 and out.splitlines()[0].split()[:4] == ["POSITION", "TIME", "EVENT_TYPE", "PRINCIPAL"]
    code, out, _ = cli(api, api.admin, ["audit", "list", "--workflow", workflow, "-o", "json"], capsys)
    assert code == 0 and {r["workflow"] for r in json.loads(out)} == {workflow}


def test_roving_audit_query_prints_the_columns_it_was_asked_for(api, acme, capsys):
    sql = "SELECT principal, count(*) AS n FROM audit WHERE principal = 'alice' GROUP BY principal"
    code, out, _ = cli(api, api.admin, ["audit", "query", sql], capsys)
    assert code == 0 and out.split()[:3] == ["PRINCIPAL", "N", "alice"]
    code, out, _ = cli(api, api.admin, ["audit", "query", sql, "-o", "yaml"], capsys)
    assert yaml.safe_load(out)["columns"] == ["principal", "n"]


def test_roving_audit_query_exits_1_with_the_refusal(api, acme, capsys):
    code, _, err = cli(api, api.admin, ["audit", "query", "ATTACH '/tmp/x.duckdb' AS x"], capsys)
    assert code == 1 and "ATTACH statements are refused" in err and "HTTP 400" in err


def test_roving_audit_export_writes_the_parquet_file(api, acme, capsys, tmp_path):
    target = tmp_path / "alice.parquet"
    code, out, _ = cli(api, api.admin, ["audit", "export", "--parquet", str(target), "--principal", "alice",
                                        "-o", "json"], capsys)
    assert code == 0 and json.loads(out)["bytes"] == target.stat().st_size
    with duckdb.connect() as reader:
        principals = reader.execute("SELECT DISTINCT principal FROM read_parquet($1)", [str(target)]).fetchall()
    assert principals == [("alice",)]


def test_roving_audit_export_without_a_file_is_bad_usage(capsys):
    with pytest.raises(SystemExit) as exit:
        build_parser().parse_args(["audit", "export"])
    assert exit.value.code == 2 and "--parquet" in capsys.readouterr().err


def test_queries_arriving_together_all_answer(api, acme):
    def ask(_: int) -> int:
        return api.request("POST", "/v4/audit/query", api.admin, json={"sql": "SELECT count(*) FROM audit"}).status_code

    with ThreadPoolExecutor(8) as pool:
        assert set(pool.map(ask, range(24))) == {200}

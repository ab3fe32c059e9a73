import pytest

from adapters.audit_log import AuditLog
from adapters.sql_guard import RefusedQuery
from projections.audit import AccessDenied, QueryFailed, Scope

ADMIN = Scope(cluster_admin=True)
ORG_A = Scope(organization="org-a")


def test_an_organization_owner_counts_only_their_own_events(two_tenants, audit):
    result = audit.query("SELECT organization, count(*) AS n FROM audit GROUP BY organization", ORG_A)
    assert result.columns == ["organization", "n"]
    assert [row[0] for row in result.rows] == ["org-a"]


def test_a_cluster_admin_queries_every_row(two_tenants, audit):
    result = audit.query("WITH per AS (SELECT organization FROM audit) SELECT count(*) FROM per", ADMIN)
    assert result.rows == [(len(two_tenants.events),)]


def test_subqueries_and_joins_stay_inside_the_view(two_tenants, audit):
    sql = "SELECT count(*) FROM audit a JOIN (SELECT position FROM audit WHERE principal = 'bob') b USING (position)"
    assert audit.query(sql, ORG_A).rows == [(0,)]


@pytest.mark.parametrize("sql, message", [
    ("SELECT * FROM audit_events", "only the audit view can be read, not 'audit_events'"),
    ("SELECT (SELECT count(*) FROM audit_events)", "only the audit view can be read"),
    ("SELECT * FROM main.audit_events", "qualified names such as 'main.audit_events' are refused"),
    ("SELECT * FROM temp.audit", "qualified names"),
    ("SELECT * FROM audit_tracking", "only the audit view can be read"),
    ("SELECT * FROM read_parquet('/tmp/x.parquet')", "table functions such as read_parquet() are refused"),
    ("SELECT * FROM read_csv_auto('/etc/passwd')", "table functions"),
    ("FROM '/tmp/other.parquet'", "only the audit view can be read"),
    ("SELECT * FROM duckdb_tables()", "table functions"),
    ("SELECT * FROM query('SELECT * FROM audit_events')", "table functions"),
    ("DESCRIBE audit_events", "DESCRIBE, SHOW and SUMMARIZE are refused"),
    ("WITH x AS (SELECT * FROM audit_events), audit_events AS (SELECT 1) SELECT * FROM x",
     "a CTE may not be named like a database table: audit_events"),
    ("SELECT current_setting('allowed_directories')", "the function current_setting() is refused"),
    ("ATTACH '/tmp/other.duckdb' AS other", "ATTACH statements are refused"),
    ("COPY audit TO '/tmp/out.parquet' (FORMAT parquet)", "COPY statements are refused"),
    ("PRAGMA database_list", "PRAGMA statements are refused"),
    ("SET enable_external_access = true", "SET statements are refused"),
    ("INSTALL httpfs", "statements are refused"),
    ("LOAD httpfs", "statements are refused"),
    ("CREATE TABLE stolen AS SELECT * FROM audit", "CREATE statements are refused"),
    ("DELETE FROM audit_events", "DELETE statements are refused"),
    ("SELECT 1; SELECT * FROM audit_events", "one statement at a time: found 2"),
    ("", "the query is empty"),
    ("SELEC 1", "does not parse"),
])
def test_statements_that_could_escape_the_view_are_refused_with_a_reason(two_tenants, audit, sql, message):
    with pytest.raises(RefusedQuery, match=message.replace("(", r"\(").replace(")", r"\)")):
        audit.query(sql, ORG_A)


def test_nothing_refused_leaves_a_trace(two_tenants, audit, store):
    for sql in ("CREATE TABLE stolen AS SELECT 1", "SELECT 1; CREATE TABLE stolen AS SELECT 1"):
        with pytest.raises(RefusedQuery):
            audit.query(sql, ADMIN)
    assert "stolen" not in store.reserved_names()


def test_a_reader_without_a_scope_cannot_query(two_tenants, audit):
    with pytest.raises(AccessDenied):
        audit.query("SELECT count(*) FROM audit", Scope())


def test_large_answers_are_cut_at_the_row_limit_and_say_so(two_tenants, store):
    result = AuditLog(store, max_rows=3).query("SELECT position FROM audit ORDER BY position", ADMIN)
    assert (len(result.rows), result.truncated) == (3, True)


def test_a_query_that_runs_too_long_is_stopped(two_tenants, store):
    slow = "SELECT count(*) FROM audit a, audit b, audit c, audit d, audit e, audit f, audit g, audit h"
    with pytest.raises(QueryFailed, match="ran past 0.05s and was stopped"):
        AuditLog(store, timeout_seconds=0.05).query(slow, ADMIN)


def test_a_mistake_in_a_query_is_reported_not_raised_raw(two_tenants, audit):
    with pytest.raises(QueryFailed, match="no_such_column"):
        audit.query("SELECT no_such_column FROM audit", ORG_A)

"""Audit SQL is bounded: memory, answer size and parse-tree kinds; a query's cost never lands on the API process."""

from concurrent.futures import ThreadPoolExecutor

import pytest

from adapters.audit_log import AuditLog
from adapters.audit_sandbox import Limits
from adapters.sql_guard import RefusedQuery, check_tree
from projections.audit import QueryFailed, Scope

ORG_A = Scope(organization="org-a")
TWO_GB_OF_LIST = "SELECT len(range(250000000))"
TWO_GB_OF_TEXT = "SELECT length(list_aggregate(range(150000000), 'count')::VARCHAR || repeat('x', 600000000))"


def peak_and_now_kib() -> tuple[int, int]:
    with open("/proc/self/status") as status:
        fields = dict(line.split(":", 1) for line in status)
    return int(fields["VmHWM"].split()[0]), int(fields["VmRSS"].split()[0])


@pytest.mark.parametrize("sql", [TWO_GB_OF_LIST, TWO_GB_OF_TEXT])
def test_a_query_needing_two_gigabytes_is_refused_by_its_limit_and_the_server_stays_flat(two_tenants, audit, sql):
    peak_before, _ = peak_and_now_kib()
    with pytest.raises(QueryFailed) as refused:
        audit.query(sql, ORG_A)
    peak_after, _ = peak_and_now_kib()
    assert refused.value.reason == "memory" and "limit" in str(refused.value)
    assert peak_after - peak_before < 100 * 1024, f"the test process grew from {peak_before} KiB to {peak_after} KiB"


def test_an_answer_over_its_size_limit_is_refused_not_sent(two_tenants, store):
    small = AuditLog(store, limits=Limits(max_answer_bytes=10_000))
    with pytest.raises(QueryFailed, match="over the limit of 10,000") as refused:
        small.query("SELECT repeat('x', 50000)", ORG_A)
    assert refused.value.reason == "size"


def test_a_tenants_sandbox_holds_only_its_own_rows(two_tenants, audit):
    assert audit.query("SELECT DISTINCT organization FROM audit", ORG_A).rows == [("org-a",)]


def test_queries_run_side_by_side_and_each_gets_its_answer(two_tenants, audit):
    with ThreadPoolExecutor(3) as pool:
        answers = list(pool.map(lambda n: audit.query(f"SELECT {n} + count(*) * 0 FROM audit", ORG_A).rows, range(3)))
    assert answers == [[(0,)], [(1,)], [(2,)]]


def test_a_parse_tree_node_the_guard_does_not_know_is_refused_by_name():
    renamed = {"node": {"type": "SELECT_NODE", "from_table": {"type": "TABLE_REF", "table_name": "audit_events"}}}
    with pytest.raises(RefusedQuery, match="the construct TABLE_REF is not allowed"):
        check_tree(renamed, set())
    unknown_expression = {"type": "SELECT_NODE", "select_list": [{"class": "BOUND_REF", "type": "BOUND_REF"}]}
    with pytest.raises(RefusedQuery, match="BOUND_REF"):
        check_tree(unknown_expression, set())


def test_the_constructs_people_write_still_pass(two_tenants, audit):
    sql = """WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 3)
             SELECT DISTINCT CASE WHEN n BETWEEN 1 AND 2 THEN 'low' ELSE 'high' END AS band, count(*) OVER () AS c,
                    list_transform([n], lambda x: x + 1)[1] AS next, n::VARCHAR COLLATE nocase AS label
             FROM t WHERE n IS NOT NULL AND n IN (1, 2, 3) ORDER BY band DESC LIMIT 5"""
    assert audit.query(sql, ORG_A).columns == ["band", "c", "next", "label"]

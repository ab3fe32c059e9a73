"""A tenant's autoscaler query: the small grammar, the matchers Roving adds, and Prometheus' answer read back."""

from __future__ import annotations

import pytest

from domain.promql import QueryError, SafeQuery, parse_query, read_answer

WORKFLOW = "0b5f6a52-0000-4000-8000-000000000001"


def vector(*values: str) -> dict:
    return {"status": "success",
            "data": {"resultType": "vector", "result": [{"metric": {}, "value": [1.7e9, v]} for v in values]}}


def test_the_shapes_a_tenant_may_write_parse_to_one_aggregation_of_one_metric():
    assert parse_query("sum(http_requests_in_flight)") == SafeQuery("sum", "http_requests_in_flight")
    assert parse_query(" avg ( rate( tokens_total [30s] ) ) ") == SafeQuery("avg", "tokens_total", "30s")
    assert parse_query("max(vllm:num_requests_waiting)") == SafeQuery("max", "vllm:num_requests_waiting")


@pytest.mark.parametrize("query", [
    'sum(x{roving_workflow="someone-elses"})',  # a matcher of its own
    "sum(x{})",
    "sum(x) or sum(y)",  # a second metric
    "sum(x) * 0 + 100",
    "sum by (roving_workflow) (x)",
    "sum(label_replace(x, \"roving_service\", \"web\", \"\", \"\"))",
    "sum(x offset 1h)",
    "sum(x @ 0)",
    "sum({__name__=\"x\"})",
    "sum(rate(x[5m:1m]))",
    "topk(1, x)",
    "sum(x)\nsum(y)",
    "sum(" + "x" * 300 + ")",
])
def test_a_query_that_could_name_other_labels_or_series_does_not_parse(query):
    with pytest.raises(QueryError):
        parse_query(query)


def test_roving_renders_the_tenants_query_with_its_own_workflow_and_service_matchers():
    assert parse_query("sum(rate(http_requests_total[1m]))").render(WORKFLOW, "web") == (
        f'sum(rate(tenant:http_requests_total{{roving_workflow="{WORKFLOW}",roving_service="web"}}[1m]))')
    assert parse_query("avg(in_flight)").render(WORKFLOW, "web") == (
        f'avg(tenant:in_flight{{roving_workflow="{WORKFLOW}",roving_service="web"}})')


def test_a_label_value_cannot_close_the_matcher_it_is_quoted_in():
    rendered = SafeQuery("sum", "x").render('w", roving_workflow=~".*', "web")
    assert rendered == 'sum(tenant:x{roving_workflow="w\\", roving_workflow=~\\".*",roving_service="web"})'


def test_an_average_counts_once_per_replica_in_the_pools_total():
    assert parse_query("avg(x)").total(3.0, 4) == 12.0
    assert parse_query("sum(x)").total(3.0, 4) == 3.0


def test_prometheus_answers_read_as_one_number_or_none_when_no_series_matched():
    assert read_answer(vector("7.5")) == 7.5
    assert read_answer(vector()) is None


@pytest.mark.parametrize(("answer", "why"), [
    ({"status": "error", "errorType": "bad_data", "error": "parse error"}, "refused the query: parse error"),
    ({"status": "success", "data": {"resultType": "matrix", "result": []}}, "not an instant vector"),
    (vector("1", "2"), "2 series, not one number"),
    (vector("NaN"), "not a finite number"),
    (vector("-1"), "not a finite number"),
    ({"status": "success", "data": {"resultType": "vector", "result": [{"metric": {}}]}}, "no [time, value] pair"),
    ([1, 2], "other than a JSON object"),
])
def test_an_answer_the_autoscaler_cannot_use_says_why(answer, why):
    with pytest.raises(QueryError, match=None) as raised:
        read_answer(answer)
    assert why in str(raised.value)
